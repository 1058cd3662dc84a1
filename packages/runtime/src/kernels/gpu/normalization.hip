// GPU normalization kernels: softmax along one axis, LayerNormalization and RMS normalization
// (with the skip sum), computed in float whatever the storage dtype (as on the CPU backend).
//
// rms_norm: each row read once into registers (16-byte vectors where the row length and the pointers
//   allow), x + skip + bias summed once and written once to the optional sum output, squares summed in
//   float over the row's threads; a group of threads per row sized to the row (a few rows per block
//   when rows are short or many, up to kNormMaxThreads threads for one long row). Rows longer than the
//   registers hold (over 16384 elements, 4096 when not vectorized) take a
//   general kernel, one block per row, that reads the row twice.
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "gpu/gpu_device.h"
#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ __forceinline__ double operator()(double a, double b) const { return fmax(a, b); }
};
struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  __device__ __forceinline__ double operator()(double a, double b) const { return a + b; }
};

// Softmax computes in float, FLOAT64 in double (as the CPU backend).
template <typename T>
using SoftmaxAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;
__device__ __forceinline__ float softmax_exp(float v) { return expf(v); }
__device__ __forceinline__ double softmax_exp(double v) { return exp(v); }

// Softmax over the last axis: one block per row.
template <typename T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t len) {
  using A = SoftmaxAcc<T>;
  __shared__ A shared[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * len;
    T* yr = y + r * len;
    A m = -INFINITY;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) m = MaxOp{}(m, static_cast<A>(load(xr, i)));
    m = block_reduce(m, MaxOp{}, shared);
    A sum = 0;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) sum += softmax_exp(static_cast<A>(load(xr, i)) - m);
    sum = block_reduce(sum, SumOp{}, shared);
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
      store(yr, i, softmax_exp(static_cast<A>(load(xr, i)) - m) / sum);
    }
  }
}

// Softmax over a middle axis of [outer, len, inner]: one thread per column.
template <typename T>
__global__ void softmax_columns_kernel(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  using A = SoftmaxAcc<T>;
  HIPDNN_EP_GRID_STRIDE(c, outer * inner) {
    const int64_t base = (c / inner) * len * inner + c % inner;
    A m = -INFINITY;
    for (int64_t a = 0; a < len; ++a) m = MaxOp{}(m, static_cast<A>(load(x, base + a * inner)));
    A sum = 0;
    for (int64_t a = 0; a < len; ++a) sum += softmax_exp(static_cast<A>(load(x, base + a * inner)) - m);
    for (int64_t a = 0; a < len; ++a) {
      store(y, base + a * inner, softmax_exp(static_cast<A>(load(x, base + a * inner)) - m) / sum);
    }
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

// ---------------------------------------------------------------- RMS norm

// The register path: each row is read once and held in registers. A row belongs to a group of
// `threads` consecutive threads (a power of two up to kNormMaxThreads; a block holds
// blockDim.x / threads rows); each thread holds kVpt vectors of kVec elements at vector indices
// lane, lane + threads, ... of the row. A vector is 16 bytes where the row length and every pointer
// allow it, else one element. x + skip + bias is formed once in float, written once to the sum
// output, and normalized from the registers.
constexpr int kNormMaxThreads = 512;  // threads of one row
constexpr int kNormMaxFloats = 32;    // row elements per thread (no more than 8 vectors)
constexpr int kNormBlock = 256;       // threads of a block holding several rows
constexpr int64_t kNormManyRows = 256;  // from this many rows on, threads hold up to 4 vectors

template <typename T, int kVec>
struct NormVector {
  static_assert(kVec == 1 || kVec * sizeof(T) == 16, "a vector is one element or 16 bytes");
  using Raw = std::conditional_t<kVec == 1, T, uint4>;
  __device__ static Raw read(const T* p, int64_t v) { return reinterpret_cast<const Raw*>(p)[v]; }
  __device__ static void write(T* p, int64_t v, const Raw& r) { reinterpret_cast<Raw*>(p)[v] = r; }
  __device__ static void unpack(const Raw& r, float (&f)[kVec]) {
    const T* e = reinterpret_cast<const T*>(&r);
#pragma unroll
    for (int i = 0; i < kVec; ++i) f[i] = static_cast<float>(load(e, i));
  }
  __device__ static Raw pack(const float (&f)[kVec]) {
    Raw r;
    T* e = reinterpret_cast<T*>(&r);
#pragma unroll
    for (int i = 0; i < kVec; ++i) store(e, i, f[i]);
    return r;
  }
};

// The sum of v over the row's group of `threads` threads; every thread of the group gets it. All
// threads of the block call it (threads is the same for all of them).
__device__ __forceinline__ float norm_row_sum(float v, int threads, float* partial) {
  for (int mask = (threads < 32 ? threads : 32) / 2; mask > 0; mask >>= 1) v += lane_xor(v, mask);
  if (threads <= 32) return v;
  // Groups of 32 lanes: the row's threads / 32 consecutive ones through shared memory.
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  const int groups = threads / 32;
  const int first = static_cast<int>(threadIdx.x / threads) * groups;
  float total = 0.0f;
  for (int g = 0; g < groups; ++g) total += partial[first + g];
  __syncthreads();  // partial is written again for the next rows
  return total;
}

// kCenter: LayerNormalization (the mean subtracted, then B added: `beta`); else RMS normalization.
template <typename T, int kVec, int kVpt, bool kCenter>
__global__ void __launch_bounds__(kNormMaxThreads)
    norm_rows_kernel(const T* x, const T* scale, const T* beta, const T* skip, const T* bias, T* y, T* sum_out,
                     int64_t rows, int64_t size, int threads_log2, float epsilon) {
  allow_dependents();  // a GEMV after this one may launch meanwhile (gpu_common.h)
  wait_for_predecessor();  // launched overlapped: x and skip may be the previous kernel's output
  using V = NormVector<T, kVec>;
  __shared__ float partial[kNormMaxThreads / 32];
  const int threads = 1 << threads_log2;
  const int lane = static_cast<int>(threadIdx.x) & (threads - 1);
  const int64_t rows_per_block = blockDim.x >> threads_log2;
  const int64_t vectors = size / kVec;
  for (int64_t r0 = blockIdx.x * rows_per_block; r0 < rows; r0 += gridDim.x * rows_per_block) {
    const int64_t r = r0 + (threadIdx.x >> threads_log2);
    const int64_t base = r * vectors;
    bool ok[kVpt];
#pragma unroll
    for (int j = 0; j < kVpt; ++j) ok[j] = r < rows && lane + int64_t{j} * threads < vectors;
    typename V::Raw raw[kVpt], raw_skip[kVpt];
#pragma unroll
    for (int j = 0; j < kVpt; ++j) {
      if (ok[j]) raw[j] = V::read(x, base + lane + j * threads);
    }
    if (skip != nullptr) {
#pragma unroll
      for (int j = 0; j < kVpt; ++j) {
        if (ok[j]) raw_skip[j] = V::read(skip, base + lane + j * threads);
      }
    }
    float v[kVpt][kVec];
    float squares = 0.0f;
#pragma unroll
    for (int j = 0; j < kVpt; ++j) {
      if (!ok[j]) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[j][e] = 0.0f;
        continue;
      }
      V::unpack(raw[j], v[j]);
      float add[kVec];
      if (skip != nullptr) {
        V::unpack(raw_skip[j], add);
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[j][e] += add[e];
      }
      if (bias != nullptr) {
        V::unpack(V::read(bias, lane + j * threads), add);
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[j][e] += add[e];
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) squares += kCenter ? v[j][e] : v[j][e] * v[j][e];  // the sum when centering
      if (sum_out != nullptr) V::write(sum_out, base + lane + j * threads, V::pack(v[j]));
    }
    squares = norm_row_sum(squares, threads, partial);
    float mean = 0.0f;
    if constexpr (kCenter) {
      // Two passes from the registers (mean, then squared deviations), as the CPU backend.
      mean = squares / static_cast<float>(size);
      squares = 0.0f;
#pragma unroll
      for (int j = 0; j < kVpt; ++j) {
        if (!ok[j]) continue;
#pragma unroll
        for (int e = 0; e < kVec; ++e) squares += (v[j][e] - mean) * (v[j][e] - mean);
      }
      squares = norm_row_sum(squares, threads, partial);
    }
    const float inv = 1.0f / sqrtf(squares / static_cast<float>(size) + epsilon);
#pragma unroll
    for (int j = 0; j < kVpt; ++j) {
      if (!ok[j]) continue;
      float s[kVec], b[kVec];
      V::unpack(V::read(scale, lane + j * threads), s);
      if (kCenter && beta != nullptr) {
        V::unpack(V::read(beta, lane + j * threads), b);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) b[e] = 0.0f;
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[j][e] = (v[j][e] - mean) * inv * s[e] + b[e];
      V::write(y, base + lane + j * threads, V::pack(v[j]));
    }
  }
}

// The general path, for rows longer than the register path holds: one block per row, which reads
// the row two or three times (the mean when centering, squares, then the output).
template <typename T, bool kCenter>
__global__ void norm_kernel(const T* x, const T* scale, const T* beta, const T* skip, const T* bias, T* y,
                            T* sum_out, int64_t rows, int64_t size, float epsilon) {
  allow_dependents();  // a GEMV after this one may launch meanwhile (gpu_common.h)
  wait_for_predecessor();  // launched overlapped: x and skip may be the previous kernel's output
  __shared__ float shared[kBlock];
  const auto sum_op = [](float a, float b) { return a + b; };
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * size;
    auto value = [&](int64_t i) {
      float v = load(x, base + i);
      if (skip != nullptr) v += load(skip, base + i);
      if (bias != nullptr) v += load(bias, i);
      return v;
    };
    float mean = 0.0f;
    if constexpr (kCenter) {
      float sum = 0.0f;
      for (int64_t i = threadIdx.x; i < size; i += blockDim.x) sum += value(i);
      mean = block_reduce(sum, sum_op, shared) / static_cast<float>(size);
    }
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const float v = value(i);
      squares += (v - mean) * (v - mean);
      if (sum_out != nullptr) store(sum_out, base + i, v);
    }
    squares = block_reduce(squares, sum_op, shared);
    const float inv = 1.0f / sqrtf(squares / static_cast<float>(size) + epsilon);
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const float b = kCenter && beta != nullptr ? static_cast<float>(load(beta, i)) : 0.0f;
      store(y, base + i, (value(i) - mean) * inv * static_cast<float>(load(scale, i)) + b);
    }
  }
}

// The register path's shape for rows of `vectors` vectors: threads per row (log2) and vectors per
// thread; false when a row does not fit in registers.
bool norm_shape(int64_t rows, int64_t vectors, int max_per_thread, int* threads_log2, int* per_thread) {
  // Few rows (a decode step): one vector per thread, the most threads, for latency. Many rows:
  // up to 4 vectors per thread and several rows per block.
  const int64_t wanted = rows >= kNormManyRows ? 4 : 1;
  int log2 = 0;
  while ((int64_t{1} << log2) * wanted < vectors && (1 << log2) < kNormMaxThreads) ++log2;
  int each = 1;
  while ((int64_t{1} << log2) * each < vectors) each *= 2;
  if (each > max_per_thread) return false;
  *threads_log2 = log2;
  *per_thread = each;
  return true;
}

template <typename T, int kVec, bool kCenter>
void launch_norm_rows(const T* x, const T* scale, const T* beta, const T* skip, const T* bias, T* y, T* sum_out,
                      int64_t rows, int64_t size, int threads_log2, int per_thread, float epsilon, hipStream_t stream) {
  const int threads = 1 << threads_log2;
  const int block = threads > kNormBlock ? threads : kNormBlock;
  const int64_t blocks = (rows + block / threads - 1) / (block / threads);
  const auto grid = static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
  auto launch = [&](auto per_thread_constant) {  // std::integral_constant<int, vectors per thread>
    constexpr int kVpt = decltype(per_thread_constant)::value;
    launch_overlapped<norm_rows_kernel<T, kVec, kVpt, kCenter>>(grid, block, 0, stream, x, scale, beta, skip, bias, y,
                                                                sum_out, rows, size, threads_log2, epsilon);
  };
  switch (per_thread) {
    case 1: launch(std::integral_constant<int, 1>{}); break;
    case 2: launch(std::integral_constant<int, 2>{}); break;
    case 4: launch(std::integral_constant<int, 4>{}); break;
    default:
      if constexpr (kVec * 8 <= kNormMaxFloats) launch(std::integral_constant<int, 8>{});
      break;
  }
}

// A tensor as a dense one of dims `target`: itself when it already has that many elements, else a
// broadcast copy in a temporary buffer. Null when absent.
const void* dense(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args, int32_t index, const Dims& target,
                  std::unique_ptr<TempBuffer>* holder) {
  if (index >= args.n_inputs || !is_present(args.inputs[index])) return nullptr;
  const hipdnn_ep_tensor_ref_t& t = args.inputs[index];
  if (element_count(t) == element_count(target)) return t.data;
  const size_t esize = dtype_size(t.dtype);
  *holder = std::make_unique<TempBuffer>(state, static_cast<uint64_t>(element_count(target)) * esize);
  strided_copy(state, t.data, 0, broadcast_strides(dims_of(t), target), (*holder)->data(), target, esize);
  return (*holder)->data();
}

// RMS or layer normalization of X (input 0) over dims [axis, rank) with Scale (input 1), the optional
// Skip and Bias summed into X first (inputs skip_at and bias_at) and the optional B (input beta_at,
// centering only); an index below 0 is an input the kernel does not have. Output 1, when present,
// gets the sum. The register path when a row fits in
// registers, else the general one.
template <bool kCenter>
void run_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args, const char* what, size_t axis,
              float epsilon, int32_t skip_at, int32_t bias_at, int32_t beta_at) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const Dims normalized(dims.begin() + static_cast<std::ptrdiff_t>(axis), dims.end());
  const int64_t rows = dims_product(dims, 0, axis);
  const int64_t size = element_count(normalized);
  if (rows == 0 || size == 0) return;
  std::unique_ptr<TempBuffer> scale_holder, beta_holder, skip_holder, bias_holder;
  const void* scale = dense(state, args, 1, normalized, &scale_holder);
  const void* beta = beta_at < 0 ? nullptr : dense(state, args, beta_at, normalized, &beta_holder);
  const void* skip = skip_at < 0 ? nullptr : dense(state, args, skip_at, dims, &skip_holder);
  const void* bias = bias_at < 0 ? nullptr : dense(state, args, bias_at, normalized, &bias_holder);
  void* sum_out = args.n_outputs > 1 ? args.outputs[1].data : nullptr;
  void* out = args.outputs[0].data;
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(in.dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    const bool vector = size % kVec == 0 && aligned(in.data, 16) && aligned(scale, 16) && aligned(beta, 16) &&
                        aligned(skip, 16) && aligned(bias, 16) && aligned(out, 16) && aligned(sum_out, 16);
    const auto* xt = static_cast<const T*>(in.data);
    const auto* st = static_cast<const T*>(scale);
    const auto* bt = static_cast<const T*>(beta);
    const auto* kt = static_cast<const T*>(skip);
    const auto* at = static_cast<const T*>(bias);
    auto* yt = static_cast<T*>(out);
    auto* ot = static_cast<T*>(sum_out);
    int threads_log2 = 0, per_thread = 0;
    const int max_per_thread = vector ? (kNormMaxFloats / kVec < 8 ? kNormMaxFloats / kVec : 8) : 8;
    if (norm_shape(rows, vector ? size / kVec : size, max_per_thread, &threads_log2, &per_thread)) {
      if (vector) {
        launch_norm_rows<T, kVec, kCenter>(xt, st, bt, kt, at, yt, ot, rows, size, threads_log2, per_thread, epsilon,
                                           stream);
      } else {
        launch_norm_rows<T, 1, kCenter>(xt, st, bt, kt, at, yt, ot, rows, size, threads_log2, per_thread, epsilon,
                                        stream);
      }
      return;
    }
    const auto grid = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
    launch_overlapped<norm_kernel<T, kCenter>>(grid, kBlock, 0, stream, xt, st, bt, kt, at, yt, ot, rows, size,
                                               epsilon);
  });
  check_launch(what);
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
  auto launch = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in.data);
    T* y = static_cast<T*>(args.outputs[0].data);
    if (inner == 1) {
      softmax_rows_kernel<<<row_grid(outer), kBlock, 0, stream>>>(x, y, outer, len);
    } else {
      softmax_columns_kernel<<<grid_for(outer * inner), kBlock, 0, stream>>>(x, y, outer, len, inner);
    }
  };
  if (in.dtype == HIPDNN_EP_DTYPE_FLOAT64) launch(TypeTag<double>{});
  else dispatch_float_gpu(in.dtype, "softmax", launch);
  check_launch("softmax");
}

void layer_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  if (is_present(args.inputs[1])) {  // the register path; the general kernel below without Scale
    return run_norm<true>(state, args, "layer_norm",
                          static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_LAYER_NORM_INT_ATTR_AXIS]),
                          static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_LAYER_NORM_FLOAT_ATTR_EPSILON]), -1, -1,
                          2);
  }
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

void rms_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  run_norm<false>(state, args, "rms_norm", static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_RMS_NORM_INT_ATTR_AXIS]),
                  static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_RMS_NORM_FLOAT_ATTR_EPSILON]), 2, 3, -1);
}

void skip_layer_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  run_norm<true>(state, args, "skip_layer_norm",
                 static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_SKIP_LAYER_NORM_INT_ATTR_AXIS]),
                 static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_SKIP_LAYER_NORM_FLOAT_ATTR_EPSILON]), 3, 4, 2);
}

}  // namespace hipdnn_ep::kernels::gpu
