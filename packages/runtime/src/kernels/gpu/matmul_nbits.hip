// The int4 MatMulNBits kernels on the GPU backends, computed in float whatever the storage dtype, following
// the CPU kernel (kernels/cpu/matmul_nbits.cpp) operation for operation where the order of a sum does not matter.
//
// matmul_nbits
//   decode (M <= kGemvMaxRows rows of A): a fused dequantize-GEMV.
//     CUDA, float16, up to 8 rows, blocks of a multiple of 128 (the int4 LLM layout): on tensor cores
//     (gemv_mma_nbits_kernel, in matmul_nbits_mma.hip). A block owns 16 output columns and its 8 warps split
//     K in steps of 128; per step a lane loads 16 bytes (32 weights) of two columns, turns the nibbles into
//     exact half pairs q - z (one AND-OR and one half operation per pair), and 8 mma.m16n8k16 multiply them
//     by A's rows (the mma's 8 columns) with float accumulation; the step's scales multiply the float sums,
//     so the result is the exact (q - z) * x summed in float, times the scale. B streams through ld.global.nc
//     without L1 allocation; one row of A is staged in shared memory per block while the first step of B is
//     in flight. 64 registers, 4 blocks per multiprocessor.
//     Otherwise one 32-lane group per output column streams the column's int4 bytes once, 16 bytes per
//     lane per load where the column is 16-byte aligned, dequantizes in registers and dots them with up
//     to 4 rows of A at a time. One row with 16-byte aligned B and blocks of 32 or more has its own
//     kernel (gemv1_nbits_kernel): 4 loads of 16 bytes of B per lane in flight, nibbles turned into
//     q - z without conversion instructions, the scale applied once per 32 weights.
//   prefill (more rows): B is dequantized, a chunk of columns at a time, to a [columns, K] matrix
//     of A's dtype in a temporary buffer of at most kDequantChunkBytes, and each chunk's product goes
//     through the GEMM library (cuBLASLt / hipBLASLt, float accumulation) into its columns of Y. The
//     dequantization (dequantize_words_kernel where B is 4-byte aligned and K % 8 == 0) gives each
//     thread 4 words of B a block apart, so the warp's loads and 16-byte stores are contiguous, with
//     32-bit index arithmetic. The chunk bounds the temporary (an lm_head of 128256 x 4096 would
//     otherwise need 1 GiB in fp16) and is small enough to be read back from L2. The dequantized chunk
//     costs 2 (fp16) or 4 (fp32) bytes per weight written and read once, while the library's tuned
//     tensor-core GEMM is used unchanged. On CUDA in float16, up to 128 rows with N wide enough to fill
//     the device, a GEMM that dequantizes its B tiles in shared memory (matmul_nbits_gemm.hip) saves that
//     traffic instead.
//
// matmul_nbits_silu_mul (a gated MLP's gate and up projections of one A, and SiLU(gate) * up)
//   CUDA, float16, blocks of 128 or more, where the tensor-core GEMV applies: one launch whose blocks own 8
//   output columns, the mma rows of the gate's 8 columns beside those of up's, SiLU(gate) * up formed in the
//   epilogue in float (an H200 at Llama-8B's 14336 x 4096, blocks of 128 with zero points: 28.5 us against
//   2 x 15.7 us and SILU_MUL). Otherwise both products as matmul_nbits (the gate's into a temporary, up's
//   into Y) and one pass Y = SiLU(gate) * Y; that includes blocks of 32 and 64, whose gated form was slower
//   than those three launches (37.3 us against 2 x 17.3 and SILU_MUL).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>

#include "gpu/gpu_blas.h"
#include "gpu/gpu_device.h"
#include "runtime_internal.h"
#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/gpu/matmul_nbits.h"
#include "kernels/nbits_dims.h"
#include "kernels/sigmoid.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

// Sum over a group of 32 consecutive lanes (a CUDA warp, half an AMD wave64).
__device__ __forceinline__ float lane_group_sum(float v) {
  for (int mask = 16; mask > 0; mask >>= 1) {
#if defined(HIPDNN_EP_PLATFORM_CUDA)
    v += __shfl_xor_sync(0xffffffffu, v, mask, 32);
#else
    v += __shfl_xor(v, mask, 32);
#endif
  }
  return v;
}

// ---------------------------------------------------------------- MatMulNBits

constexpr int kGemvMaxRows = 16;   // rows of A up to which the fused GEMV runs
constexpr int kGemvColumns = 8;    // output columns per block (one 32-lane group each)
// The prefill path's dequantized temporary: at most this many bytes (a chunk of whole columns, at
// least kDequantMinColumns of them).
constexpr int64_t kDequantChunkBytes = int64_t{32} << 20;
constexpr int64_t kDequantMinColumns = 256;


// The dequantization factors of the block holding nibble k0 of column col.
template <typename T>
__device__ __forceinline__ void block_factors(const NbitsArgs& p, const T* scales, int64_t col, int64_t k0,
                                              float* scale, float* zero) {
  const int64_t blk = k0 / p.block;
  *scale = static_cast<float>(load(scales, col * p.blocks + blk));
  if (p.zp == nullptr) {
    *zero = 8.0f;
  } else {
    const uint8_t packed = p.zp[col * p.zp_stride + blk / 2];
    *zero = static_cast<float>((blk & 1) == 0 ? (packed & 0x0F) : (packed >> 4));
  }
}

// acc[r] += sum over the 8 nibbles of word (elements k0..k0+7) of a[r] * (q - zero) * scale.
template <typename T, int kRows>
__device__ __forceinline__ void gemv_word(const NbitsArgs& p, const T* a, const T* scales, int64_t col, int64_t row0,
                                          uint32_t word, int64_t k0, bool a_vector, float (&acc)[kRows]) {
  float scale, zero;
  block_factors(p, scales, col, k0, &scale, &zero);
  float w[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) w[i] = (static_cast<float>((word >> (4 * i)) & 0x0F) - zero) * scale;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (row0 + r >= p.m) break;
    float x[8];
    load8(a + (row0 + r) * p.k, k0, p.k, a_vector, x);
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) dot += x[i] * w[i];
    acc[r] += dot;
  }
}

// kLoad: 16 = the column is 16-byte aligned (uint4 loads), 4 = 4-byte aligned (words), 1 = bytes.
template <typename T, int kRows, int kLoad>
__global__ void gemv_nbits_kernel(NbitsArgs p, const T* a, const T* scales, const T* bias, T* y, bool a_vector) {
  const int lane = threadIdx.x % 32;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kGemvColumns + threadIdx.x / 32;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kRows;
  if (col >= p.n) return;
  const uint8_t* bytes = p.b + col * p.col_bytes;
  const int64_t words = p.col_bytes / 4;  // col_bytes = blocks * block / 2, a multiple of 8
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
  int64_t first_word = 0;
  if constexpr (kLoad == 16) {
    const int64_t quads = words / 4;
    const auto* v = reinterpret_cast<const uint4*>(bytes);
#pragma unroll 2
    for (int64_t q = lane; q < quads; q += 32) {
      const uint4 raw = v[q];
      const uint32_t parts[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t k0 = (q * 4 + j) * 8;
        if (k0 < p.k) gemv_word<T, kRows>(p, a, scales, col, row0, parts[j], k0, a_vector, acc);
      }
    }
    first_word = quads * 4;
  }
  for (int64_t wi = first_word + lane; wi < words; wi += 32) {
    uint32_t word;
    if constexpr (kLoad == 1) {
      word = static_cast<uint32_t>(bytes[4 * wi]) | static_cast<uint32_t>(bytes[4 * wi + 1]) << 8 |
             static_cast<uint32_t>(bytes[4 * wi + 2]) << 16 | static_cast<uint32_t>(bytes[4 * wi + 3]) << 24;
    } else {
      word = reinterpret_cast<const uint32_t*>(bytes)[wi];
    }
    const int64_t k0 = wi * 8;
    if (k0 < p.k) gemv_word<T, kRows>(p, a, scales, col, row0, word, k0, a_vector, acc);
  }
  const float b = bias != nullptr ? static_cast<float>(load(bias, col)) : 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const float sum = lane_group_sum(acc[r]);
    if (lane == 0 && row0 + r < p.m) store(y, (row0 + r) * p.n + col, sum + b);
  }
}

// One row of A (a decode step of one sequence), B 16-byte aligned, blocks of 32 or more elements:
// each lane takes 16 bytes of B (32 weights of one quantization block) at a time, kGemvLoads of them
// in flight before the first is used; warps are independent (A is read through the L1 cache). A
// nibble q becomes q - z without a conversion instruction: 0x4B000000 | q is the float 2^23 + q, minus
// 2^23 + z. The block's scale is applied once per 32 weights.
constexpr int kGemvLoads = 4;  // 16-byte loads of B per lane in flight

__device__ __forceinline__ float nibble_minus(uint32_t word, int i, float offset) {
  return __int_as_float(0x4B000000 | ((word >> (4 * i)) & 0x0F)) - offset;
}

// 8 elements of A from k0 (a multiple of 8) as float, zeros past K.
__device__ __forceinline__ void load8_row(const __half* a, int64_t k0, int64_t k, bool vector_ok, float (&x)[8]) {
  if (vector_ok && k0 + 8 <= k) {
    const uint4 raw = *reinterpret_cast<const uint4*>(a + k0);
    const auto* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(h[i]);
      x[2 * i] = f.x;
      x[2 * i + 1] = f.y;
    }
    return;
  }
  load8(a, k0, k, vector_ok, x);
}
__device__ __forceinline__ void load8_row(const float* a, int64_t k0, int64_t k, bool vector_ok, float (&x)[8]) {
  load8(a, k0, k, vector_ok, x);
}

template <typename T>
__global__ void __launch_bounds__(32 * kGemvColumns) gemv1_nbits_kernel(NbitsArgs p, const T* a, const T* scales,
                                                                         const T* bias, T* y, bool a_vector) {
  const int lane = threadIdx.x % 32;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kGemvColumns + threadIdx.x / 32;
  if (col >= p.n) return;
  const auto* v = reinterpret_cast<const uint4*>(p.b + col * p.col_bytes);
  const int64_t groups = p.col_bytes / 16;  // of 32 weights
  float acc = 0.0f;
  for (int64_t g0 = 0; g0 < groups; g0 += 32 * kGemvLoads) {
    uint4 raw[kGemvLoads];
#pragma unroll
    for (int u = 0; u < kGemvLoads; ++u) {
      const int64_t g = g0 + lane + 32 * u;
      if (g < groups) raw[u] = v[g];
    }
#pragma unroll
    for (int u = 0; u < kGemvLoads; ++u) {
      const int64_t g = g0 + lane + 32 * u;
      if (g >= groups) break;
      const int64_t k0 = g * 32;
      if (k0 >= p.k) break;
      float scale, zero;
      block_factors(p, scales, col, k0, &scale, &zero);
      const float offset = 8388608.0f + zero;
      const uint32_t parts[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
      float dot = 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float x[8];
        load8_row(a, k0 + 8 * j, p.k, a_vector, x);
#pragma unroll
        for (int i = 0; i < 8; ++i) dot += x[i] * nibble_minus(parts[j], i, offset);
      }
      acc += scale * dot;
    }
  }
  const float sum = lane_group_sum(acc);
  if (lane == 0) store(y, col, sum + (bias != nullptr ? static_cast<float>(load(bias, col)) : 0.0f));
}


// w[col - col0, k] = (q - zero) * scale for columns [col0, col0 + cols) and k < K: one thread per
// 4-byte word of B (8 elements). kVector: B is 4-byte aligned and K % 8 == 0, so the word is one load
// and its 8 values one 16-byte store (two for float32).
template <typename T, bool kVector>
__global__ void dequantize_nbits_kernel(NbitsArgs p, const T* scales, int64_t col0, int64_t cols, T* w) {
  const int64_t words_per_col = p.col_bytes / 4;
  HIPDNN_EP_GRID_STRIDE(i, cols * words_per_col) {
    const int64_t c = i / words_per_col;
    const int64_t col = col0 + c;
    const int64_t k0 = (i % words_per_col) * 8;
    if (k0 >= p.k) continue;
    const uint8_t* bytes = p.b + col * p.col_bytes + (k0 / 2);
    float scale, zero;
    block_factors(p, scales, col, k0, &scale, &zero);
    if constexpr (kVector) {
      const uint32_t word = *reinterpret_cast<const uint32_t*>(bytes);
      T v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = static_cast<T>((static_cast<float>((word >> (4 * j)) & 0x0F) - zero) * scale);
      auto* out = reinterpret_cast<uint4*>(w + c * p.k + k0);
      const auto* packed = reinterpret_cast<const uint4*>(v);
#pragma unroll
      for (int j = 0; j < static_cast<int>(8 * sizeof(T) / sizeof(uint4)); ++j) out[j] = packed[j];
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint8_t v = bytes[j];
        if (k0 + 2 * j < p.k) store(w, c * p.k + k0 + 2 * j, (static_cast<float>(v & 0x0F) - zero) * scale);
        if (k0 + 2 * j + 1 < p.k) store(w, c * p.k + k0 + 2 * j + 1, (static_cast<float>(v >> 4) - zero) * scale);
      }
    }
  }
}

// The prefill dequantization with B 4-byte aligned, K % 8 == 0 and a chunk of fewer than 2^32 words:
// each thread takes kDequantWords words of B (8 weights each) kBlock apart, so that the warp's 4-byte loads
// and 16-byte stores (two for float32) are contiguous, all its loads in flight before the first store;
// 32-bit index arithmetic. (q - z) * scale is computed exactly in float (0x4B000000 | q is 2^23 + q) and
// rounded once, as in dequantize_nbits_kernel.
constexpr int kDequantWords = 4;

template <typename T>
__global__ void __launch_bounds__(kBlock) dequantize_words_kernel(NbitsArgs p, const T* scales, int64_t col0,
                                                                  uint32_t cols, T* w) {
  const auto per_col = static_cast<uint32_t>(p.col_bytes / 4);
  const uint32_t total = cols * per_col;
  const auto block = static_cast<uint32_t>(p.block);
  const auto* words = reinterpret_cast<const uint32_t*>(p.b + col0 * p.col_bytes);
  for (uint32_t base = blockIdx.x * (kBlock * kDequantWords) + threadIdx.x; base < total;
       base += gridDim.x * (kBlock * kDequantWords)) {
    uint32_t v[kDequantWords];
#pragma unroll
    for (int j = 0; j < kDequantWords; ++j) {
      const uint32_t i = base + j * kBlock;
      v[j] = i < total ? words[i] : 0;
    }
#pragma unroll
    for (int j = 0; j < kDequantWords; ++j) {
      const uint32_t i = base + j * kBlock;
      if (i >= total) break;
      const uint32_t c = i / per_col;
      const uint32_t k0 = (i - c * per_col) * 8;
      if (k0 >= p.k) continue;
      const int64_t col = col0 + c;
      const uint32_t blk = k0 / block;
      const float scale = static_cast<float>(load(scales, col * p.blocks + blk));
      float zero = 8.0f;
      if (p.zp != nullptr) zero = static_cast<float>((p.zp[col * p.zp_stride + blk / 2] >> (4 * (blk & 1))) & 0x0F);
      const float offset = 8388608.0f + zero;
      T out[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        out[e] = static_cast<T>((__int_as_float(0x4B000000 | ((v[j] >> (4 * e)) & 0x0F)) - offset) * scale);
      }
      const auto* packed = reinterpret_cast<const uint4*>(out);
      auto* dst = reinterpret_cast<uint4*>(w + int64_t{c} * p.k + k0);
#pragma unroll
      for (int q = 0; q < static_cast<int>(8 * sizeof(T) / sizeof(uint4)); ++q) dst[q] = packed[q];
    }
  }
}


// Columns of W dequantized at a time: all of them when they fit kDequantChunkBytes, else as many as
// fit (a multiple of kDequantMinColumns, at least that many).
int64_t dequant_chunk_columns(int64_t n, int64_t k, size_t item) {
  const int64_t per_column = k * static_cast<int64_t>(item);
  if (n * per_column <= kDequantChunkBytes) return n;
  int64_t columns = kDequantChunkBytes / per_column / kDequantMinColumns * kDequantMinColumns;
  if (columns < kDequantMinColumns) columns = kDequantMinColumns;
  return columns < n ? columns : n;
}

template <typename T, int kRows>
void launch_gemv(const NbitsArgs& p, const T* a, const T* scales, const T* bias, T* y, hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.n + kGemvColumns - 1) / kGemvColumns),
                  static_cast<unsigned>((p.m + kRows - 1) / kRows));
  const bool a_vector = aligned(a, 16) && (p.k * static_cast<int64_t>(sizeof(T))) % 16 == 0;
  if (p.m == 1 && p.block >= 32 && aligned(p.b, 16) && p.col_bytes % 16 == 0) {
    gemv1_nbits_kernel<T><<<grid.x, 32 * kGemvColumns, 0, stream>>>(p, a, scales, bias, y, a_vector);
    return;
  }
  const unsigned threads = 32 * kGemvColumns;
  if (aligned(p.b, 16) && p.col_bytes % 16 == 0) {
    gemv_nbits_kernel<T, kRows, 16><<<grid, threads, 0, stream>>>(p, a, scales, bias, y, a_vector);
  } else if (aligned(p.b, 4)) {
    gemv_nbits_kernel<T, kRows, 4><<<grid, threads, 0, stream>>>(p, a, scales, bias, y, a_vector);
  } else {
    gemv_nbits_kernel<T, kRows, 1><<<grid, threads, 0, stream>>>(p, a, scales, bias, y, a_vector);
  }
}

// The call's shape (nbits_dims.h) and one weight's B (input at) and zero points (input at + 2), of
// matmul_nbits or matmul_nbits_silu_mul; where the tensor-core GEMV may run, whether B, its scales and zero
// points are the run's weights.
NbitsArgs nbits_args(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args, int32_t at) {
  NbitsArgs p{};
  static_cast<NbitsDims&>(p) = nbits_dims(args);
  p.col_bytes = p.blocks * (p.block / 2);
  p.zp_stride = (p.blocks + 1) / 2;
  p.b = static_cast<const uint8_t*>(args.inputs[at].data);
  const bool has_zp = args.n_inputs > at + 2 && is_present(args.inputs[at + 2]);
  p.zp = has_zp ? static_cast<const uint8_t*>(args.inputs[at + 2].data) : nullptr;
#if defined(HIPDNN_EP_PLATFORM_CUDA)
  if (p.m <= kGemvMaxRows && args.inputs[0].dtype == HIPDNN_EP_DTYPE_FLOAT16) {
    p.constant_weights = holds_run_weights(state, args.inputs[at]) && holds_run_weights(state, args.inputs[at + 1]) &&
                         (!has_zp || holds_run_weights(state, args.inputs[at + 2]));
  }
#else
  (void)state;
#endif
  return p;
}

// y = A x p's weight (+ bias): the GEMV for up to kGemvMaxRows rows (on tensor cores where it applies),
// else the dequantized weight through the GEMM library.
template <typename T>
void run_nbits(hipdnn_ep_state_t* state, const NbitsArgs& p, int32_t dtype, const T* a, const T* scales, const T* bias,
               T* y, hipStream_t stream) {
  if (p.m <= kGemvMaxRows) {
#if defined(HIPDNN_EP_PLATFORM_CUDA)
    if constexpr (std::is_same_v<T, __half>) {
      if (launch_gemv_mma(p, a, scales, bias, y, gpu_device(state).multiprocessors(), stream)) {
        check_launch("matmul_nbits");
        return;
      }
    }
#endif
    if (p.m == 1) {
      launch_gemv<T, 1>(p, a, scales, bias, y, stream);
    } else if (p.m == 2) {
      launch_gemv<T, 2>(p, a, scales, bias, y, stream);
    } else {
      launch_gemv<T, 4>(p, a, scales, bias, y, stream);
    }
    check_launch("matmul_nbits");
    return;
  }
#if defined(HIPDNN_EP_PLATFORM_CUDA)
  if constexpr (std::is_same_v<T, __half>) {
    if (gemm_nbits_applies(p, a, gpu_device(state).multiprocessors()) &&
        launch_gemm_nbits(p, a, scales, bias, y, stream)) {
      check_launch("matmul_nbits (prefill GEMM)");
      return;
    }
  }
#endif
  // Prefill: y = A W^T a chunk of W's columns at a time (W [N, K] dequantized into a bounded
  // temporary), the bias first written into y and added through beta = 1.
  const int64_t columns = dequant_chunk_columns(p.n, p.k, sizeof(T));
  TempBuffer w(state, static_cast<uint64_t>(columns * p.k) * sizeof(T));
  if (bias != nullptr) {
    strided_copy(state, bias, 0, Dims{0, 1}, y, Dims{p.m, p.n}, sizeof(T));
  }
  const bool vector = aligned(p.b, 4) && p.k % 8 == 0;
  const bool words = vector && columns * (p.col_bytes / 4) < (int64_t{1} << 32);
  for (int64_t col0 = 0; col0 < p.n; col0 += columns) {
    const int64_t cols = p.n - col0 < columns ? p.n - col0 : columns;
    T* chunk = static_cast<T*>(w.data());
    const unsigned grid = grid_for(cols * (p.col_bytes / 4) / (words ? kDequantWords : 1));
    if (words) {
      dequantize_words_kernel<T><<<grid, kBlock, 0, stream>>>(p, scales, col0, static_cast<uint32_t>(cols), chunk);
    } else if (vector) {
      dequantize_nbits_kernel<T, true><<<grid, kBlock, 0, stream>>>(p, scales, col0, cols, chunk);
    } else {
      dequantize_nbits_kernel<T, false><<<grid, kBlock, 0, stream>>>(p, scales, col0, cols, chunk);
    }
    check_launch("matmul_nbits (dequantize)");
    GemmProblem g{};
    g.dtype = dtype;
    g.m = p.m;
    g.n = cols;
    g.k = p.k;
    g.trans_a = false;
    g.trans_b = true;
    g.a = a;
    g.lda = p.k;
    g.b = chunk;
    g.ldb = p.k;
    g.c = y + col0;
    g.ldc = p.n;
    g.batch = 1;
    g.alpha = 1.0f;
    g.beta = bias != nullptr ? 1.0f : 0.0f;
    gpu_device(state).blas().gemm(g, stream);
  }
}

// y = SiLU(gate) * y, elementwise in float (matmul_nbits_silu_mul where the gated GEMV does not apply).
template <typename T>
__global__ void silu_mul_kernel(const T* gate, T* y, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = static_cast<float>(gate[i]);
    y[i] = static_cast<T>(g * sigmoid(g) * static_cast<float>(y[i]));
  }
}

}  // namespace

void matmul_nbits(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  if (element_count(args.outputs[0]) == 0) return;
  const NbitsArgs p = nbits_args(state, args, 1);
  const bool has_bias = args.n_inputs > 4 && is_present(args.inputs[4]);
  dispatch_float_gpu(args.inputs[0].dtype, "matmul_nbits", [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_nbits<T>(state, p, args.inputs[0].dtype, static_cast<const T*>(args.inputs[0].data), static_cast<const T*>(args.inputs[2].data),
                 has_bias ? static_cast<const T*>(args.inputs[4].data) : nullptr, static_cast<T*>(args.outputs[0].data),
                 current_stream(state));
  });
}

void matmul_nbits_silu_mul(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  if (element_count(args.outputs[0]) == 0) return;
  const NbitsArgs gate = nbits_args(state, args, 1), up = nbits_args(state, args, 4);
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "matmul_nbits_silu_mul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = static_cast<const T*>(args.inputs[0].data);
    const T* gate_scales = static_cast<const T*>(args.inputs[2].data);
    const T* up_scales = static_cast<const T*>(args.inputs[5].data);
    T* y = static_cast<T*>(args.outputs[0].data);
#if defined(HIPDNN_EP_PLATFORM_CUDA)
    if constexpr (std::is_same_v<T, __half>) {
      if (launch_gemv_mma_silu_mul(gate, gate_scales, up, up_scales, a, y, gpu_device(state).multiprocessors(),
                                   stream)) {
        check_launch("matmul_nbits_silu_mul");
        return;
      }
    }
#endif
    // Both products, the gate's into a temporary and up's into y (in one launch where the paired tensor-core
    // GEMV applies), then y = SiLU(gate) * y.
    const int64_t count = element_count(args.outputs[0]);
    TempBuffer gate_out(state, static_cast<uint64_t>(count) * sizeof(T));
    T* gate_y = static_cast<T*>(gate_out.data());
    bool paired = false;
#if defined(HIPDNN_EP_PLATFORM_CUDA)
    if constexpr (std::is_same_v<T, __half>) {
      paired = launch_gemv_mma_paired(gate, gate_scales, up, up_scales, a, gate_y, y,
                                      gpu_device(state).multiprocessors(), stream);
      if (paired) check_launch("matmul_nbits_silu_mul");
    }
#endif
    if (!paired) {
      run_nbits<T>(state, gate, args.inputs[0].dtype, a, gate_scales, nullptr, gate_y, stream);
      run_nbits<T>(state, up, args.inputs[0].dtype, a, up_scales, nullptr, y, stream);
    }
    silu_mul_kernel<T><<<grid_for(count), kBlock, 0, stream>>>(gate_y, y, count);
    check_launch("matmul_nbits_silu_mul");
  });
}

}  // namespace hipdnn_ep::kernels::gpu
