// GPU normalization kernels: softmax along one axis and LayerNormalization,
// computed in float whatever the storage dtype (as on the CPU backend).
#include <cmath>
#include <memory>

#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// Softmax over the last axis: one block per row.
template <typename T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t len) {
  __shared__ float shared[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * len;
    T* yr = y + r * len;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) m = fmaxf(m, load(xr, i));
    m = block_reduce(m, MaxOp{}, shared);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) sum += expf(load(xr, i) - m);
    sum = block_reduce(sum, SumOp{}, shared);
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) store(yr, i, expf(load(xr, i) - m) / sum);
  }
}

// Softmax over a middle axis of [outer, len, inner]: one thread per column.
template <typename T>
__global__ void softmax_columns_kernel(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  HIPDNN_EP_GRID_STRIDE(c, outer * inner) {
    const int64_t base = (c / inner) * len * inner + c % inner;
    float m = -INFINITY;
    for (int64_t a = 0; a < len; ++a) m = fmaxf(m, load(x, base + a * inner));
    float sum = 0.0f;
    for (int64_t a = 0; a < len; ++a) sum += expf(load(x, base + a * inner) - m);
    for (int64_t a = 0; a < len; ++a) store(y, base + a * inner, expf(load(x, base + a * inner) - m) / sum);
  }
}

// One block per row of `size` elements; scale/bias are dense [size] (or null).
template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* scale, const T* bias, T* y, int64_t rows, int64_t size,
                                  float epsilon) {
  __shared__ float shared[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * size;
    T* yr = y + r * size;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) sum += load(xr, i);
    const float mean = block_reduce(sum, SumOp{}, shared) / static_cast<float>(size);
    // Two passes (mean, then squared deviations), like the CPU backend.
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const float d = load(xr, i) - mean;
      squares += d * d;
    }
    const float var = block_reduce(squares, SumOp{}, shared) / static_cast<float>(size);
    const float inv_std = 1.0f / sqrtf(var + epsilon);
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const float s = scale != nullptr ? load(scale, i) : 1.0f;
      const float b = bias != nullptr ? load(bias, i) : 0.0f;
      store(yr, i, (load(xr, i) - mean) * inv_std * s + b);
    }
  }
}

unsigned row_grid(int64_t rows) { return static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8); }

// A Scale/B tensor as a dense [normalized] vector: the tensor itself when it
// already has that many elements (leading 1s only), else a broadcast copy.
const void* dense_param(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t& t, const Dims& normalized,
                        std::unique_ptr<TempBuffer>* holder) {
  if (!is_present(t)) return nullptr;
  const int64_t size = element_count(normalized);
  if (element_count(t) == size) return t.data;
  const size_t esize = dtype_size(t.dtype);
  *holder = std::make_unique<TempBuffer>(state, static_cast<uint64_t>(size) * esize);
  strided_copy(state, t.data, 0, broadcast_strides(dims_of(t), normalized), (*holder)->data(), normalized, esize);
  return (*holder)->data();
}

}  // namespace

void softmax(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_SOFTMAX_INT_ATTR_AXIS]);
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  const int64_t len = dims[axis];
  if (element_count(dims) == 0) return;
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(in.dtype, "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in.data);
    T* y = static_cast<T*>(args.outputs[0].data);
    if (inner == 1) {
      softmax_rows_kernel<<<row_grid(outer), kBlock, 0, stream>>>(x, y, outer, len);
    } else {
      softmax_columns_kernel<<<grid_for(outer * inner), kBlock, 0, stream>>>(x, y, outer, len, inner);
    }
  });
  check_launch("softmax");
}

void layer_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_LAYER_NORM_INT_ATTR_AXIS]);
  const auto epsilon = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_LAYER_NORM_FLOAT_ATTR_EPSILON]);
  const Dims normalized(dims.begin() + static_cast<std::ptrdiff_t>(axis), dims.end());
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t size = element_count(normalized);
  if (outer == 0 || size == 0) return;
  std::unique_ptr<TempBuffer> scale_holder, bias_holder;
  const void* scale = dense_param(state, args.inputs[1], normalized, &scale_holder);
  const hipdnn_ep_tensor_ref_t absent{nullptr, nullptr, -1, in.dtype};
  const void* bias = dense_param(state, args.n_inputs > 2 ? args.inputs[2] : absent, normalized, &bias_holder);
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(in.dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_kernel<<<row_grid(outer), kBlock, 0, stream>>>(
        static_cast<const T*>(in.data), static_cast<const T*>(scale), static_cast<const T*>(bias),
        static_cast<T*>(args.outputs[0].data), outer, size, epsilon);
  });
  check_launch("layer_norm");
}

}  // namespace hipdnn_ep::kernels::gpu
