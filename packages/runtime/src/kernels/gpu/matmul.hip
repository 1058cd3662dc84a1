// GPU matrix products: MatMul (ONNX semantics, broadcast batch dims) and Gemm,
// through the GEMM library (gpu/gpu_blas.h), accumulating in float32.
//
// MatMul maps batches onto one strided-batched call when the batch dims of
// A and B are each either equal to the result's or entirely broadcast
// (stride 0); a contiguous A against a shared B folds its batch into M.
// Other broadcast patterns issue one call per run of batches.
#include <array>

#include "gpu/gpu_blas.h"
#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

void zero_fill(hipdnn_ep_state_t* state, void* data, int64_t bytes) {
  if (bytes == 0) return;
  if (hipError_t e = hipMemsetAsync(data, 0, static_cast<size_t>(bytes), current_stream(state)); e != hipSuccess) {
    fail(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text("matmul: clearing the output", e));
  }
}

template <typename T>
__global__ void scale_kernel(T* data, int64_t n, float factor) {
  HIPDNN_EP_GRID_STRIDE(i, n) { store(data, i, factor * load(data, i)); }
}

}  // namespace

void matmul(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& a = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& b = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const MatmulShape s = matmul_shape(dims_of(a), dims_of(b));
  const int64_t batches = element_count(s.batch);
  if (s.m == 0 || s.n == 0 || batches == 0) return;
  const size_t esize = dtype_size(out.dtype);
  if (s.k == 0) return zero_fill(state, out.data, batches * s.m * s.n * static_cast<int64_t>(esize));
  GpuBlas& blas = gpu_device(state).blas();
  const hipStream_t stream = current_stream(state);
  GemmProblem p{};
  p.dtype = out.dtype;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.lda = s.k;
  p.ldb = s.n;
  p.ldc = s.n;
  p.alpha = 1.0f;
  p.beta = 0.0f;
  const int64_t a_batches = element_count(s.a_batch);
  const int64_t b_batches = element_count(s.b_batch);
  const bool a_full = a_batches == batches, b_full = b_batches == batches;
  if ((a_full || a_batches == 1) && (b_full || b_batches == 1)) {
    p.a = a.data;
    p.b = b.data;
    p.c = out.data;
    if (b_batches == 1 && a_full) {
      // A's batches are consecutive rows: one [batch*M, K] x [K, N] product.
      p.m = s.m * batches;
      p.batch = 1;
    } else {
      p.batch = batches;
      p.stride_a = a_full ? s.m * s.k : 0;
      p.stride_b = b_full ? s.k * s.n : 0;
      p.stride_c = s.m * s.n;
    }
    blas.gemm(p, stream);
    return;
  }
  // General broadcast: one product per batch, walking the batch shape.
  const std::array<Dims, 3> strides{contiguous_strides(s.batch), broadcast_strides(s.a_batch, s.batch),
                                    broadcast_strides(s.b_batch, s.batch)};
  const auto* pa = static_cast<const char*>(a.data);
  const auto* pb = static_cast<const char*>(b.data);
  auto* pc = static_cast<char*>(out.data);
  p.batch = 1;
  for_each_row<3>(s.batch, strides, [&](const std::array<int64_t, 3>& off, int64_t count,
                                        const std::array<int64_t, 3>& st) {
    p.a = pa + off[1] * s.m * s.k * static_cast<int64_t>(esize);
    p.b = pb + off[2] * s.k * s.n * static_cast<int64_t>(esize);
    p.c = pc + off[0] * s.m * s.n * static_cast<int64_t>(esize);
    p.batch = count;
    p.stride_a = st[1] * s.m * s.k;
    p.stride_b = st[2] * s.k * s.n;
    p.stride_c = st[0] * s.m * s.n;
    blas.gemm(p, stream);
  });
}

namespace {

// C of dims [n], [1, n], ... at a 16-byte boundary: one value per column, the same for every row, as
// the GEMM library's bias epilogue reads it.
bool is_row_bias(const hipdnn_ep_tensor_ref_t& c, int64_t n) {
  const Dims dims = dims_of(c);
  if (dims.empty() || dims.back() != n || reinterpret_cast<uintptr_t>(c.data) % 16 != 0) return false;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    if (dims[i] != 1) return false;
  }
  return true;
}

}  // namespace

void gemm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& a = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& b = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const bool trans_a = args.int_attrs[HIPDNN_EP_KERNEL_GEMM_INT_ATTR_TRANS_A] != 0;
  const bool trans_b = args.int_attrs[HIPDNN_EP_KERNEL_GEMM_INT_ATTR_TRANS_B] != 0;
  const auto alpha = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_GEMM_FLOAT_ATTR_ALPHA]);
  const auto beta = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_GEMM_FLOAT_ATTR_BETA]);
  const int64_t m = out.dims[0];
  const int64_t n = out.dims[1];
  const int64_t k = trans_a ? a.dims[0] : a.dims[1];
  if (m == 0 || n == 0) return;
  // C is ignored when beta is 0, as in ONNX Runtime (so NaN in C stays out).
  const bool use_c = args.n_inputs > 2 && is_present(args.inputs[2]) && beta != 0.0f;
  GemmProblem p{};
  p.dtype = out.dtype;
  p.m = m;
  p.n = n;
  p.k = k;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.a = a.data;
  p.lda = trans_a ? m : k;
  p.b = b.data;
  p.ldb = trans_b ? k : n;
  p.c = out.data;
  p.ldc = n;
  p.batch = 1;
  p.alpha = alpha;
  if (use_c && beta == 1.0f && k > 0 && is_row_bias(args.inputs[2], n)) {
    // A linear layer's bias (the compiler's fuse-linear-bias makes MatMul + Add this call): the GEMM
    // library adds it in its epilogue, one launch instead of a broadcast copy and the product.
    p.beta = 0.0f;
    p.bias = args.inputs[2].data;
    try {
      gpu_device(state).blas().gemm(p, current_stream(state));
      return;
    } catch (const KernelError& e) {
      if (e.status() != HIPDNN_EP_STATUS_UNSUPPORTED) throw;  // no algorithm with the epilogue: below
    }
    p.bias = nullptr;
  }
  if (use_c) {
    // out = C broadcast to [M, N] in out's dtype, then out = alpha*AB + beta*out.
    const hipdnn_ep_tensor_ref_t& c = args.inputs[2];
    const Dims shape{m, n};
    const Dims c_strides = broadcast_strides(dims_of(c), shape);
    strided_copy(state, c.data, 0, c_strides, out.data, shape, dtype_size(out.dtype));  // validated: same dtype
  }
  if (k == 0) {
    // alpha * (empty sum) + beta * C
    if (!use_c) return zero_fill(state, out.data, m * n * static_cast<int64_t>(dtype_size(out.dtype)));
    dispatch_float_gpu(out.dtype, "gemm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      scale_kernel<<<grid_for(m * n), kBlock, 0, current_stream(state)>>>(static_cast<T*>(out.data), m * n, beta);
    });
    check_launch("gemm");
    return;
  }
  p.beta = use_c ? beta : 0.0f;
  gpu_device(state).blas().gemm(p, current_stream(state));
}

}  // namespace hipdnn_ep::kernels::gpu
