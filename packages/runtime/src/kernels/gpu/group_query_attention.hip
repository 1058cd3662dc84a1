// The LLM kernels on the GPU backends: int4 MatMulNBits, RMS normalization (with the skip sum),
// RotaryEmbedding and GroupQueryAttention with its KV cache. They compute in float whatever the
// storage dtype and follow the CPU kernels (kernels/cpu/llm.cpp) operation for operation where
// the order of a sum does not matter.
//
// matmul_nbits
//   decode (M <= kGemvMaxRows rows of A): a fused dequantize-GEMV.
//     CUDA, float16, up to 8 rows, blocks of a multiple of 128 (the int4 LLM layout): on tensor cores
//     (gemv_mma_nbits_kernel). A block owns 16 output columns and its 8 warps split K in steps of 128;
//     per step a lane loads 16 bytes (32 weights) of two columns, turns the nibbles into exact half
//     pairs q - z (one AND-OR and one half operation per pair), and 8 mma.m16n8k16 multiply
//     them by A's rows (the mma's 8 columns) with float accumulation; the step's scales multiply the
//     float sums, so the result is the exact (q - z) * x summed in float, times the scale. B streams
//     through ld.global.nc without L1 allocation; one row of A is staged in shared memory per block
//     while the first step of B is in flight. 64 registers, 4 blocks per multiprocessor.
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
//     tensor-core GEMM is used unchanged; a GEMM that dequantizes its B tiles in shared memory would
//     save that traffic.
// rms_norm: each row read once into registers (16-byte vectors where the row length and the pointers
//   allow), x + skip + bias summed once and written once to the optional sum output, squares summed in
//   float over the row's threads; a group of threads per row sized to the row (a few rows per block
//   when rows are short or many, up to kNormMaxThreads threads for one long row). Rows longer than the
//   registers hold (over 16384 elements, 4096 when not vectorized) take a
//   general kernel, one block per row, that reads the row twice.
// rotary_embedding: one thread per rotated pair.
// group_query_attention: two or three launches on the stream.
//   1. the present cache (a thread per 8 elements of a row): the row's valid past (not copied when
//      present and past are one buffer, the shared-buffer mode), then the new K (rotated) and V,
//      then zeros (not written in the shared-buffer mode, where those positions are unused);
//   2. prefill (more than one new token): one block per (batch, KV head, tile of query rows); the
//      tile holds query rows of that KV head's group, ordered token-major, so the block reads each
//      key and value row of its KV head once for all of them, with an online softmax over tiles of
//      keys (any cache length), and causal and window bounds limit the key tiles a query tile visits.
//      float16 on CUDA (sm_80 and later, head size 64 or 128) runs gqa_flash_kernel: 64 query rows
//      per block, keys and values through shared memory by cp.async, S = Q K^T and O += P V on the
//      tensor cores (mma.sync m16n8k16, float accumulators), the softmax in registers. Other dtypes,
//      head sizes and AMD run gqa_attention_kernel, scalar float through shared memory.
//   2. decode (one new token): gqa_decode_kernel reads each key and value row once with 16-byte
//      loads (8 elements a lane), all query heads of a KV head's group per block, an online softmax
//      per slot of lanes merged in shared memory. A short cache is one block per KV head, which
//      writes the output; a longer one is split over about two blocks per multiprocessor, and
//      3. gqa_decode_merge_kernel combines the splits.
//   seqlens_k, total_sequence_length and the rotary positions are device data: the kernels check
//   them, skip what a bad one would reach, and record it for the host to report at the run's wait
//   (gpu_common.h: data checks); no launch waits, so a decode step can be captured.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>

#include "gpu/gpu_blas.h"
#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

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

// 8 elements of row a starting at k0 (< K), as float; zeros past K.
template <typename T>
__device__ __forceinline__ void load8(const T* a, int64_t k0, int64_t k, bool vector_ok, float (&out)[8]) {
  if (vector_ok && k0 + 8 <= k) {
    if constexpr (sizeof(T) == 2) {
      const uint4 raw = *reinterpret_cast<const uint4*>(a + k0);
      const auto* h = reinterpret_cast<const __half*>(&raw);
#pragma unroll
      for (int i = 0; i < 8; ++i) out[i] = __half2float(h[i]);
    } else {
      const float4 lo = *reinterpret_cast<const float4*>(a + k0);
      const float4 hi = *reinterpret_cast<const float4*>(a + k0 + 4);
      out[0] = lo.x; out[1] = lo.y; out[2] = lo.z; out[3] = lo.w;
      out[4] = hi.x; out[5] = hi.y; out[6] = hi.z; out[7] = hi.w;
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = k0 + i < k ? static_cast<float>(load(a, k0 + i)) : 0.0f;
}

struct NbitsArgs {
  const uint8_t* b;
  const uint8_t* zp;  // null: zero point 8
  int64_t m, k, n, block, blocks, col_bytes, zp_stride;
};

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

#if defined(HIPDNN_EP_PLATFORM_CUDA)
// The decode GEMV on tensor cores (CUDA, float16, 1..kMmaRows rows of A, blocks of a multiple of 128
// elements, B 16-byte aligned). A block owns kMmaColumns output columns; its kMmaWarps warps split K in
// steps of 128 elements (one quantization block or part of one) and each warp issues the loads of
// kMmaSteps steps (B, scales, zero points) before using the first. In a step, lane (g, t) = (lane / 4,
// lane % 4) loads 16 bytes (32 weights) of columns g and g + 8 at K offset 32 t, turns the nibbles into
// exact half pairs q - z, and 8 mma.m16n8k16 (W as the 16 x 16 operand, A's rows as the 8 columns of
// the other) sum q - z times A in float; the step's scales multiply that float sum. K is permuted the
// same way in both operands (pairs of elements 4 apart, as the nibble trick yields them), which a dot
// product does not see. The warps' partial sums meet in shared memory.
constexpr int kMmaRows = 8;
constexpr int kMmaColumns = 16;
constexpr int kMmaWarps = 8;
constexpr int kMmaBlocksPerSm = 4;             // the launch bound: at most 64 registers a thread
constexpr int64_t kMmaSharedA = 48 << 10;      // bytes of shared memory for A, at most

__device__ __forceinline__ uint32_t half2_bits(__half2 h) { return *reinterpret_cast<const uint32_t*>(&h); }
__device__ __forceinline__ __half2 bits_half2(uint32_t u) { return *reinterpret_cast<const __half2*>(&u); }

// 16 bytes read once: through the non-coherent path, not kept in L1 (where A stays).
__device__ __forceinline__ uint4 load_streamed(const uint8_t* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// The nibbles q0..q7 of w minus the zero point z as exact half pairs (q0, q4), (q1, q5), (q2, q6),
// (q3, q7): the half with bits 0x6400 | m is 1024 + m, so q sits at 1024 + q and q << 4 at 1024 + 16 q.
// zlo is (1024 + z) twice, zhi -(64 + z) twice.
__device__ __forceinline__ void nibble_pairs(uint32_t w, __half2 zlo, __half2 zhi, uint32_t (&h)[4]) {
  const __half2 sixteenth = __float2half2_rn(0.0625f);
  const uint32_t w8 = w >> 8;
  h[0] = half2_bits(__hsub2(bits_half2((w & 0x000F000Fu) | 0x64006400u), zlo));
  h[1] = half2_bits(__hfma2(bits_half2((w & 0x00F000F0u) | 0x64006400u), sixteenth, zhi));
  h[2] = half2_bits(__hsub2(bits_half2((w8 & 0x000F000Fu) | 0x64006400u), zlo));
  h[3] = half2_bits(__hfma2(bits_half2((w8 & 0x00F000F0u) | 0x64006400u), sixteenth, zhi));
}

// d += W (16 x 16, row major) * X (16 x 8, column major), float accumulation.
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap();  // the host launches this kernel only on devices of compute capability 8.0 or more
#endif
}

// 8 halves of row x from k0 (a multiple of 8), zeros past K. kVector: x is 16-byte aligned, K % 8 == 0.
template <bool kVector>
__device__ __forceinline__ uint4 load8_half(const __half* x, int64_t k0, int64_t k) {
  if constexpr (kVector) {
    return k0 < k ? __ldg(reinterpret_cast<const uint4*>(x + k0)) : make_uint4(0, 0, 0, 0);
  } else {
    uint32_t v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const __half lo = k0 + 2 * i < k ? x[k0 + 2 * i] : __float2half(0.0f);
      const __half hi = k0 + 2 * i + 1 < k ? x[k0 + 2 * i + 1] : __float2half(0.0f);
      v[i] = half2_bits(__halves2half2(lo, hi));
    }
    return make_uint4(v[0], v[1], v[2], v[3]);
  }
}

// One step of K (128 elements) of columns g and g + 8 for lane (g, t): 16 bytes of B each, the block's
// scale and zero point.
struct MmaStep {
  uint4 w[2];
  float scale[2];
  uint32_t zero[2];
};

__device__ __forceinline__ void load_mma_step(const NbitsArgs& p, const __half* scales, const int64_t (&col)[2], int t,
                                              int64_t s, uint32_t steps_per_block, MmaStep& st) {
  const int64_t blk = static_cast<uint32_t>(s) / steps_per_block;
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    st.w[c] = load_streamed(p.b + col[c] * p.col_bytes + s * 64 + t * 16);
    st.scale[c] = __half2float(scales[col[c] * p.blocks + blk]);
    st.zero[c] = p.zp == nullptr ? 8u : (p.zp[col[c] * p.zp_stride + blk / 2] >> (4 * (blk & 1))) & 0x0Fu;
  }
}

// kVectorA: A is 16-byte aligned and K % 8 == 0. kSharedA: one row of A, staged in shared memory (zeros
// past K) once per block while the first step of B is in flight.
template <bool kVectorA, bool kSharedA>
__global__ void __launch_bounds__(32 * kMmaWarps, kMmaBlocksPerSm)
    gemv_mma_nbits_kernel(NbitsArgs p, const __half* a, const __half* scales, const __half* bias, __half* y) {
  extern __shared__ uint4 shared_a[];  // kSharedA: steps * 128 halves
  __shared__ float partial[kMmaWarps][kMmaColumns][kMmaRows];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kMmaColumns;
  const int64_t col[2] = {imin(col0 + g, p.n - 1), imin(col0 + g + 8, p.n - 1)};  // past N: computed, not stored
  const int64_t steps = p.col_bytes / 64;
  const auto steps_per_block = static_cast<uint32_t>(p.block / 128);
  // The row of A in the mma's column g.
  const __half* x = kSharedA ? reinterpret_cast<const __half*>(shared_a) : a + imin(g, p.m - 1) * p.k;
  MmaStep st;
  if (warp < steps) load_mma_step(p, scales, col, t, warp, steps_per_block, st);
  if constexpr (kSharedA) {
    const auto* src = reinterpret_cast<const uint4*>(a);
    for (int64_t i = threadIdx.x; i < steps * 16; i += 32 * kMmaWarps) {
      shared_a[i] = i * 8 < p.k ? __ldg(src + i) : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
  }
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t s = warp; s < steps; s += kMmaWarps) {
    if (s != warp) load_mma_step(p, scales, col, t, s, steps_per_block, st);
    const int64_t k0 = s * 128 + t * 32;
    uint4 xs[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      xs[i] = kSharedA ? reinterpret_cast<const uint4*>(x)[k0 / 8 + i] : load8_half<kVectorA>(x, k0 + 8 * i, p.k);
    }
    __half2 zlo[2], zhi[2];
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      zlo[c] = bits_half2((0x6400u | st.zero[c]) * 0x00010001u);
      zhi[c] = __hsub2(__float2half2_rn(960.0f), zlo[c]);
    }
    const uint32_t words[2][4] = {{st.w[0].x, st.w[0].y, st.w[0].z, st.w[0].w},
                                  {st.w[1].x, st.w[1].y, st.w[1].z, st.w[1].w}};
    float d[2][4] = {};  // two chains of 4 mma
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t lo[4], hi[4];  // columns g and g + 8
      nibble_pairs(words[0][i], zlo[0], zhi[0], lo);
      nibble_pairs(words[1][i], zlo[1], zhi[1], hi);
      const uint4 v = xs[i];  // (x0, x1), (x2, x3), (x4, x5), (x6, x7)
      mma_16x8x16(d[0], lo[0], hi[0], lo[1], hi[1], __byte_perm(v.x, v.z, 0x5410), __byte_perm(v.x, v.z, 0x7632));
      mma_16x8x16(d[1], lo[2], hi[2], lo[3], hi[3], __byte_perm(v.y, v.w, 0x5410), __byte_perm(v.y, v.w, 0x7632));
    }
    acc[0] += (d[0][0] + d[1][0]) * st.scale[0];
    acc[1] += (d[0][1] + d[1][1]) * st.scale[0];
    acc[2] += (d[0][2] + d[1][2]) * st.scale[1];
    acc[3] += (d[0][3] + d[1][3]) * st.scale[1];
  }
  // acc[0], acc[1]: column g, rows 2t and 2t + 1; acc[2], acc[3]: column g + 8.
  partial[warp][g][2 * t] = acc[0];
  partial[warp][g][2 * t + 1] = acc[1];
  partial[warp][g + 8][2 * t] = acc[2];
  partial[warp][g + 8][2 * t + 1] = acc[3];
  __syncthreads();
  if (threadIdx.x < kMmaColumns * kMmaRows) {
    const int c = threadIdx.x / kMmaRows, r = threadIdx.x % kMmaRows;
    const int64_t column = col0 + c;
    if (r < p.m && column < p.n) {
      float sum = bias != nullptr ? __half2float(bias[column]) : 0.0f;
#pragma unroll
      for (int wi = 0; wi < kMmaWarps; ++wi) sum += partial[wi][c][r];
      y[r * p.n + column] = __float2half_rn(sum);
    }
  }
}

// Whether the current device runs mma.m16n8k16 (compute capability 8.0 or more); asked once per device.
bool mma_device() {
  static std::atomic<int> known[64] = {};
  int device = 0;
  if (hipGetDevice(&device) != hipSuccess || device < 0 || device >= 64) return false;
  int v = known[device].load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0;
    v = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 8 ? 1 : 2;
    known[device].store(v, std::memory_order_relaxed);
  }
  return v == 1;
}
#endif

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

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

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

// ---------------------------------------------------------------- rotary (shared by both ops)

// Element i of a head vector x (its first rotary_dim elements rotated by angle index j):
// pairs (j, j + rotary_dim / 2), or (2j, 2j + 1) when interleaved.
template <typename T, typename C>
__device__ __forceinline__ float rotated(const T* x, int64_t i, const C* cos_row, const C* sin_row, int64_t rotary_dim,
                                         bool interleaved) {
  const float v = load(x, i);
  if (i >= rotary_dim) return v;
  const int64_t half = rotary_dim / 2;
  int64_t j, partner;
  bool first;
  if (interleaved) {
    j = i / 2;
    first = (i & 1) == 0;
    partner = i ^ 1;
  } else {
    first = i < half;
    j = first ? i : i - half;
    partner = first ? i + half : i - half;
  }
  const float c = load(cos_row, j), s = load(sin_row, j), o = load(x, partner);
  return first ? v * c - o * s : v * c + o * s;
}

// Elements [i0, i0 + 8) of head vector x (size d, zeros past it) as rotated() computes them (unrotated
// when !rotate), with every load issued before the arithmetic: no element waits for another's loads.
template <typename T>
__device__ __forceinline__ void rotated8(const T* x, int64_t i0, int64_t d, const T* cos_row, const T* sin_row,
                                         int64_t rotary_dim, bool interleaved, bool rotate, float (&out)[8]) {
  const int64_t half = rotary_dim / 2;
  float v[8], o[8], c[8], sn[8];
  bool first[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int64_t i = i0 + e;
    const bool rot = rotate && i < rotary_dim && i < d;
    first[e] = interleaved ? (i & 1) == 0 : i < half;
    const int64_t j = interleaved ? i / 2 : (first[e] ? i : i - half);
    const int64_t partner = interleaved ? (i ^ 1) : (first[e] ? i + half : i - half);
    v[e] = i < d ? load(x, i) : 0.0f;
    o[e] = rot ? load(x, partner) : 0.0f;
    c[e] = rot ? load(cos_row, j) : 1.0f;
    sn[e] = rot ? load(sin_row, j) : 0.0f;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const bool rot = rotate && i0 + e < rotary_dim && i0 + e < d;
    out[e] = !rot ? v[e] : (first[e] ? v[e] * c[e] - o[e] * sn[e] : v[e] * c[e] + o[e] * sn[e]);
  }
}

template <typename T>
__global__ void rotary_kernel(const T* x, const int64_t* pos, const T* cos, const T* sin, T* y, int64_t batch,
                              int64_t seq, int64_t heads, int64_t head_size, int64_t rotary_dim, int64_t positions,
                              int64_t width, bool bnsh, bool offset_only, bool interleaved,
                              DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(e, batch * seq * heads * head_size) {
    const int64_t i = e % head_size;
    const int64_t vec = e / head_size;  // (b, s, h) or (b, h, s)
    int64_t b, s;
    if (bnsh) {
      s = vec % seq;
      b = vec / (seq * heads);
    } else {
      s = (vec / heads) % seq;
      b = vec / (seq * heads);
    }
    const int64_t position = offset_only ? pos[0] + s : pos[b * seq + s];
    if (position < 0 || position >= positions) {  // zeros written, recorded (gpu_common.h: data checks)
      if (i == 0) report_error(errors, kErrorRotaryPosition, position, positions);
      store(y, e, 0.0f);
      continue;
    }
    const T* xv = x + vec * head_size;
    store(y, e, rotated(xv, i, cos + position * width, sin + position * width, rotary_dim, interleaved));
  }
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

__device__ __forceinline__ float lane_xor(float v, int mask) {
#if defined(HIPDNN_EP_PLATFORM_CUDA)
  return __shfl_xor_sync(0xffffffffu, v, mask, 32);
#else
  return __shfl_xor(v, mask, 32);
#endif
}

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

template <typename T, int kVec, int kVpt>
__global__ void __launch_bounds__(kNormMaxThreads)
    rms_norm_rows_kernel(const T* x, const T* scale, const T* skip, const T* bias, T* y, T* sum_out, int64_t rows,
                         int64_t size, int threads_log2, float epsilon) {
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
      for (int e = 0; e < kVec; ++e) squares += v[j][e] * v[j][e];
      if (sum_out != nullptr) V::write(sum_out, base + lane + j * threads, V::pack(v[j]));
    }
    squares = norm_row_sum(squares, threads, partial);
    const float inv_rms = 1.0f / sqrtf(squares / static_cast<float>(size) + epsilon);
#pragma unroll
    for (int j = 0; j < kVpt; ++j) {
      if (!ok[j]) continue;
      float s[kVec];
      V::unpack(V::read(scale, lane + j * threads), s);
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[j][e] *= inv_rms * s[e];
      V::write(y, base + lane + j * threads, V::pack(v[j]));
    }
  }
}

// The general path, for rows longer than the register path holds: one block per row, which reads
// the row twice (squares, then the output).
template <typename T>
__global__ void rms_norm_kernel(const T* x, const T* scale, const T* skip, const T* bias, T* y, T* sum_out,
                                int64_t rows, int64_t size, float epsilon) {
  __shared__ float shared[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * size;
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      float v = load(x, base + i);
      if (skip != nullptr) v += load(skip, base + i);
      if (bias != nullptr) v += load(bias, i);
      squares += v * v;
      if (sum_out != nullptr) store(sum_out, base + i, v);
    }
    squares = block_reduce(squares, [](float a, float b) { return a + b; }, shared);
    const float inv_rms = 1.0f / sqrtf(squares / static_cast<float>(size) + epsilon);
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      float v = load(x, base + i);
      if (skip != nullptr) v += load(skip, base + i);
      if (bias != nullptr) v += load(bias, i);
      store(y, base + i, v * inv_rms * static_cast<float>(load(scale, i)));
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

template <typename T, int kVec>
void launch_rms_norm_rows(const T* x, const T* scale, const T* skip, const T* bias, T* y, T* sum_out, int64_t rows,
                          int64_t size, int threads_log2, int per_thread, float epsilon, hipStream_t stream) {
  const int threads = 1 << threads_log2;
  const int block = threads > kNormBlock ? threads : kNormBlock;
  const int64_t blocks = (rows + block / threads - 1) / (block / threads);
  const auto grid = static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
  auto launch = [&](auto kernel) {
    kernel<<<grid, block, 0, stream>>>(x, scale, skip, bias, y, sum_out, rows, size, threads_log2, epsilon);
  };
  switch (per_thread) {
    case 1: launch(rms_norm_rows_kernel<T, kVec, 1>); break;
    case 2: launch(rms_norm_rows_kernel<T, kVec, 2>); break;
    case 4: launch(rms_norm_rows_kernel<T, kVec, 4>); break;
    default:
      if constexpr (kVec * 8 <= kNormMaxFloats) launch(rms_norm_rows_kernel<T, kVec, 8>);
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

// ---------------------------------------------------------------- GroupQueryAttention

struct GqaParams {
  int64_t batch, seq, heads, kv_heads, head_size, past, present;
  int64_t token_stride, kv_token_stride;  // elements between tokens of query (or packed QKV) and of key/value
  int64_t rotary_dim, rotary_positions, rotary_width;
  int64_t window;
  float scale, softcap;
  bool packed, do_rotary, interleaved, copy_past, zero_tail;
};

// The lengths of batch row b: valid keys and the past positions; false (and recorded when `report`) when bad.
// A row with bad lengths is skipped: its output and present rows stay as they were.
struct RowLengths {
  int64_t valid, past_len;
  bool first_prompt;
};

__device__ __forceinline__ bool row_lengths(const GqaParams& g, const int32_t* seqlens, const int32_t* total_ptr,
                                            int64_t b, DataErrorRecord* errors, bool report, RowLengths* out) {
  const int64_t total = *total_ptr;
  if (total < g.seq || total > g.present) {
    if (report) report_error(errors, kErrorGqaTotalLength, total, g.seq, g.present);
    return false;
  }
  out->first_prompt = g.seq == total;
  const int64_t seqlen = seqlens[b];
  out->valid = seqlen + 1;
  if (out->valid < 1 || out->valid > g.present) {
    if (report) report_error(errors, kErrorGqaSeqlens, b, seqlen, g.present);
    return false;
  }
  out->past_len = out->first_prompt ? 0 : out->valid - g.seq;
  if (out->past_len < 0 || out->past_len > g.past) {
    if (report) report_error(errors, kErrorGqaPastLength, b, seqlen, g.seq, g.past);
    return false;
  }
  return true;
}

__device__ __forceinline__ int64_t token_position(const RowLengths& r, int64_t s) {
  return r.first_prompt ? (s < r.valid ? s : 1) : r.past_len + s;
}

// present[b, kvh, p, i] for every position p: past, new (rotated K), zeros. In the shared-buffer
// mode (nothing to copy, no zeros) only the new tokens' positions are visited. A thread per 8
// elements of a row (loads issued together, the index arithmetic once for the 8).
template <typename T>
__global__ void gqa_present_kernel(GqaParams g, const T* query, const T* key, const T* value, const T* past_k,
                                   const T* past_v, const int32_t* seqlens, const int32_t* total, const T* cos,
                                   const T* sin, T* present_k, T* present_v, DataErrorRecord* errors) {
  const int64_t d = g.head_size, pieces = (d + 7) / 8;
  const bool new_only = !g.copy_past && !g.zero_tail;
  const int64_t positions = new_only ? g.seq : g.present;
  HIPDNN_EP_GRID_STRIDE(x, g.batch * g.kv_heads * positions * pieces) {
    const int64_t i0 = (x % pieces) * 8;
    const int64_t n = (x / pieces) % positions;
    const int64_t kvh = (x / (pieces * positions)) % g.kv_heads;
    const int64_t b = x / (pieces * positions * g.kv_heads);
    RowLengths r;
    if (!row_lengths(g, seqlens, total, b, errors, kvh == 0 && n == 0 && i0 == 0, &r)) continue;
    const int64_t p = new_only ? r.past_len + n : n;
    const int64_t e = ((b * g.kv_heads + kvh) * g.present + p) * d + i0;
    const int count = static_cast<int>(imin(8, d - i0));
    if (p < r.past_len) {
      if (g.copy_past) {
        const int64_t src = ((b * g.kv_heads + kvh) * g.past + p) * d + i0;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (j < count) {
            present_k[e + j] = past_k[src + j];
            present_v[e + j] = past_v[src + j];
          }
        }
      }
    } else if (p < r.past_len + g.seq) {
      const int64_t s = p - r.past_len;
      const T* k_row = g.packed ? query + (b * g.seq + s) * g.token_stride + (g.heads + kvh) * d
                                : key + (b * g.seq + s) * g.kv_token_stride + kvh * d;
      const T* v_row = g.packed ? query + (b * g.seq + s) * g.token_stride + (g.heads + g.kv_heads + kvh) * d
                                : value + (b * g.seq + s) * g.kv_token_stride + kvh * d;
      const int64_t position = g.do_rotary ? token_position(r, s) : 0;
      if (g.do_rotary && (position < 0 || position >= g.rotary_positions)) {  // the row stays as it was, recorded
        if (i0 == 0) report_error(errors, kErrorGqaRotaryPosition, position, g.rotary_positions);
        continue;
      }
      float k[8];
      rotated8(k_row, i0, d, cos + position * g.rotary_width, sin + position * g.rotary_width, g.rotary_dim,
               g.interleaved, g.do_rotary, k);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (j < count) {
          store(present_k, e + j, k[j]);
          present_v[e + j] = v_row[i0 + j];
        }
      }
    } else if (g.zero_tail) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (j < count) {
          store(present_k, e + j, 0.0f);
          store(present_v, e + j, 0.0f);
        }
      }
    }
  }
}

constexpr int kAttnThreads = 128;
constexpr int kAttnRows = 16;     // query rows per block
constexpr int kAttnKeys = 32;     // keys per chunk at most (fewer for large heads, to fit the shared memory)
constexpr int kMaxHeadSize = 256;
constexpr int kAccPerThread = kAttnRows * kMaxHeadSize / kAttnThreads;

constexpr size_t kAttnSharedBytes = 46 * 1024;  // under the 48 KiB default with the static arrays

// Keys per chunk for head size d, so that the shared memory fits kAttnSharedBytes.
int attention_chunk(int64_t d) {
  const int64_t fixed = 4 * (kAttnRows * d + kAttnRows * kAttnKeys + 3 * kAttnRows);
  const int64_t keys = (static_cast<int64_t>(kAttnSharedBytes) - fixed) / (4 * (d + 1));
  return static_cast<int>(keys < kAttnKeys ? keys : kAttnKeys);
}

size_t attention_shared_bytes(int64_t d, int chunk) {
  return 4 * static_cast<size_t>(kAttnRows * d + chunk * (d + 1) + kAttnRows * kAttnKeys + 3 * kAttnRows);
}

// Decode (one new token per sequence): one block per (key split, KV head, batch row, chunk of up to
// kDecodeHeads query heads of the KV head's group). A block's 256 threads form slots of `lanes`
// lanes (lanes * 8 >= head size, a power of two); a slot holds one key row, 8 elements per lane
// (one 16-byte load of float16), so a pass reads 256 / lanes keys at once, and kDecodeBatch passes'
// loads of K and V are in flight together. Each slot keeps a running max, sum and weighted sum of
// values per query head (online softmax); the slots are merged through shared memory at the end.
// Short caches take one split: the block writes the output. Longer ones are split over enough
// blocks to fill the GPU, each writes its unnormalized sum, max and exp sum, and a second kernel
// merges the splits of each head (rescaling each by exp(its max - the overall max)).
constexpr int kDecodeThreads = 256;
constexpr int kDecodeBatch = 4;         // keys per slot whose loads are in flight together
constexpr int kDecodeHeads = 8;         // query heads per block at most (larger groups use more blocks)
constexpr int kDecodeSingleBatches = 4;  // caches of at most this many batches of passes take one split

// Keys [begin, end) of batch row b's new token (end 0: the row's lengths were refused).
__device__ __forceinline__ void decode_key_range(const GqaParams& g, const int32_t* seqlens, const int32_t* total,
                                                 int64_t b, RowLengths* len, int64_t* begin, int64_t* end) {
  *begin = *end = 0;
  if (!row_lengths(g, seqlens, total, b, nullptr, false, len)) return;  // reported by gqa_present_kernel
  *end = imin(len->past_len + 1, len->valid);
  *begin = g.window > 0 ? imax(0, *end - g.window) : 0;
}

struct DecodeSplit {
  int lanes;               // lanes per key row
  int64_t keys_per_split;  // a multiple of the keys of one batch of passes
  int64_t splits;
  bool vector;             // rows are read with 16-byte loads
};

// Splits > 1: partial[b, h, split] = the split's unnormalized output (d floats), then its max score
// and exp sum. One split: out[b, 0, h] directly.
template <typename T, int G>
__global__ void __launch_bounds__(kDecodeThreads) gqa_decode_kernel(GqaParams g, const T* query, const T* cos,
                                                                    const T* sin, const int32_t* seqlens,
                                                                    const int32_t* total, const T* present_k,
                                                                    const T* present_v, DecodeSplit split,
                                                                    float* partial, T* out) {
  __shared__ float slot_max[kDecodeThreads][G];
  __shared__ float slot_sum[kDecodeThreads][G];
  __shared__ float reduce[kDecodeThreads * 8];
  __shared__ float q_shared[G * kMaxHeadSize];
  const int64_t d = g.head_size, group = g.heads / g.kv_heads;
  const int64_t b = blockIdx.z, kvh = blockIdx.y / ((group + G - 1) / G);
  const int64_t head0 = kvh * group + (blockIdx.y % ((group + G - 1) / G)) * G;  // this block's first query head
  const int heads = static_cast<int>(imin(G, (kvh + 1) * group - head0));
  RowLengths len;
  int64_t begin, end;
  decode_key_range(g, seqlens, total, b, &len, &begin, &end);
  const int64_t k_lo = begin + blockIdx.x * split.keys_per_split;
  const int64_t k_hi = imin(end, k_lo + split.keys_per_split);
  if (k_lo >= k_hi) return;  // past the row's keys: the merge reads only splits that have some
  const int lanes = split.lanes, slots = kDecodeThreads / lanes;
  const int slot = threadIdx.x / lanes, sub = threadIdx.x % lanes;
  const int64_t i0 = static_cast<int64_t>(sub) * 8;  // this lane's 8 elements of a row

  // The block's queries, rotated, staged in shared memory (8 elements per thread, loads issued
  // together); then this lane's elements of each, times the scale.
  const int64_t position = g.do_rotary ? token_position(len, 0) : 0;
  const bool rotate = g.do_rotary && position >= 0 && position < g.rotary_positions;  // else reported
  const int64_t pieces = (d + 7) / 8;
  for (int64_t t = threadIdx.x; t < heads * pieces; t += kDecodeThreads) {
    const int64_t r = t / pieces, c0 = (t % pieces) * 8;
    float v[8];
    rotated8(query + b * g.seq * g.token_stride + (head0 + r) * d, c0, d, cos + position * g.rotary_width,
             sin + position * g.rotary_width, g.rotary_dim, g.interleaved, rotate, v);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      if (c0 + e < d) q_shared[r * d + c0 + e] = v[e];
    }
  }
  __syncthreads();
  float q[G][8];
#pragma unroll
  for (int r = 0; r < G; ++r) {
#pragma unroll
    for (int e = 0; e < 8; ++e) q[r][e] = r < heads && i0 + e < d ? q_shared[r * d + i0 + e] * g.scale : 0.0f;
  }
  float m[G], l[G], acc[G][8];
#pragma unroll
  for (int r = 0; r < G; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] = 0.0f;
  }
  const T* k_head = present_k + (b * g.kv_heads + kvh) * g.present * d;
  const T* v_head = present_v + (b * g.kv_heads + kvh) * g.present * d;
  // Every thread runs the same passes (the lane sums shuffle across slots of a warp); keys past
  // k_hi are masked.
  for (int64_t base = k_lo; base < k_hi; base += static_cast<int64_t>(slots) * kDecodeBatch) {
    float kx[kDecodeBatch][8], vx[kDecodeBatch][8];
#pragma unroll
    for (int j = 0; j < kDecodeBatch; ++j) {
      const int64_t key = base + j * slots + slot;
      if (key < k_hi) {
        load8(k_head + key * d, i0, d, split.vector, kx[j]);
        load8(v_head + key * d, i0, d, split.vector, vx[j]);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) kx[j][e] = vx[j][e] = 0.0f;
      }
    }
#pragma unroll
    for (int r = 0; r < G; ++r) {
      float s[kDecodeBatch];
      float mx = m[r];
#pragma unroll
      for (int j = 0; j < kDecodeBatch; ++j) {
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot += q[r][e] * kx[j][e];
        for (int mask = lanes / 2; mask > 0; mask >>= 1) dot += lane_xor(dot, mask);
        if (g.softcap > 0.0f) dot = g.softcap * tanhf(dot / g.softcap);
        s[j] = base + j * slots + slot < k_hi ? dot : -INFINITY;
        mx = fmaxf(mx, s[j]);
      }
      if (mx == -INFINITY) continue;  // no key of this slot yet
      const float c = expf(m[r] - mx);
      float sum = l[r] * c;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] *= c;
#pragma unroll
      for (int j = 0; j < kDecodeBatch; ++j) {
        const float p = expf(s[j] - mx);
        sum += p;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][e] += p * vx[j][e];
      }
      m[r] = mx;
      l[r] = sum;
    }
  }
  // Merge the slots: each head's overall max, every slot's weight exp(its max - that), the sums.
  if (sub == 0) {
#pragma unroll
    for (int r = 0; r < G; ++r) {
      slot_max[slot][r] = m[r];
      slot_sum[slot][r] = l[r];
    }
  }
  __syncthreads();
  const int64_t row_stride = split.splits * (d + 2);
#pragma unroll
  for (int r = 0; r < G; ++r) {
    if (r >= heads) break;  // the same for the whole block
    float mx = -INFINITY;
    for (int s = 0; s < slots; ++s) mx = fmaxf(mx, slot_max[s][r]);
    const float w = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
#pragma unroll
    for (int e = 0; e < 8; ++e) reduce[threadIdx.x * 8 + e] = acc[r][e] * w;
    __syncthreads();
    const int64_t h = head0 + r;
    for (int64_t i = threadIdx.x; i < d; i += kDecodeThreads) {
      float value = 0.0f, sum = 0.0f;
      for (int s = 0; s < slots; ++s) {
        value += reduce[(s * lanes + i / 8) * 8 + i % 8];
        if (slot_max[s][r] != -INFINITY) sum += expf(slot_max[s][r] - mx) * slot_sum[s][r];
      }
      if (split.splits == 1) {
        store(out, (b * g.heads + h) * d + i, value / sum);
      } else {
        float* row = partial + (b * g.heads + h) * row_stride + blockIdx.x * (d + 2);
        row[i] = value;
        if (i == 0) {
          row[d] = mx;
          row[d + 1] = sum;
        }
      }
    }
    __syncthreads();
  }
}

// out[b, 0, h] = sum over splits of exp(m_c - m) * o_c / sum over splits of exp(m_c - m) * l_c.
constexpr int kDecodeMaxSplits = 512;

template <typename T>
__global__ void __launch_bounds__(128) gqa_decode_merge_kernel(GqaParams g, const int32_t* seqlens,
                                                               const int32_t* total, const float* partial,
                                                               int64_t keys_per_split, int64_t splits, T* out) {
  __shared__ float split_max[kDecodeMaxSplits], split_sum[kDecodeMaxSplits];
  const int64_t h = blockIdx.x, b = blockIdx.y, d = g.head_size;
  RowLengths len;
  int64_t begin, end;
  decode_key_range(g, seqlens, total, b, &len, &begin, &end);
  if (end <= begin) return;  // refused lengths: the row stays as it was, reported by gqa_present_kernel
  const int used = static_cast<int>((end - begin + keys_per_split - 1) / keys_per_split);
  const float* row = partial + (b * g.heads + h) * splits * (d + 2);
  for (int c = threadIdx.x; c < used; c += blockDim.x) {
    split_max[c] = row[c * (d + 2) + d];
    split_sum[c] = row[c * (d + 2) + d + 1];
  }
  __syncthreads();
  float m = -INFINITY;
  for (int c = 0; c < used; ++c) m = fmaxf(m, split_max[c]);
  float sum = 0.0f;
  for (int c = 0; c < used; ++c) sum += expf(split_max[c] - m) * split_sum[c];
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float acc = 0.0f;
#pragma unroll 8
    for (int c = 0; c < used; ++c) acc += expf(split_max[c] - m) * row[c * (d + 2) + i];
    store(out, (b * g.heads + h) * d + i, acc / sum);
  }
}

// Dynamic shared memory: q [kAttnRows][d], kv [chunk][d + 1], p [kAttnRows][kAttnKeys], and per row
// running max, sum and the rescale factor.
template <typename T>
__global__ void __launch_bounds__(kAttnThreads) gqa_attention_kernel(GqaParams g, const T* query, const T* cos,
                                                                     const T* sin, const int32_t* seqlens,
                                                                     const int32_t* total, const T* present_k,
                                                                     const T* present_v, T* out, int chunk) {
  extern __shared__ float smem[];
  const int64_t d = g.head_size;
  const int64_t group = g.heads / g.kv_heads;
  const int64_t b = blockIdx.z, kvh = blockIdx.y;
  const int64_t row_begin = static_cast<int64_t>(blockIdx.x) * kAttnRows;  // rows r = s * group + j
  const int64_t rows = imin(kAttnRows, g.seq * group - row_begin);
  float* q = smem;
  float* kv = q + kAttnRows * d;
  const int64_t kv_pitch = d + 1;
  float* probs = kv + chunk * kv_pitch;
  float* row_max = probs + kAttnRows * kAttnKeys;
  float* row_sum = row_max + kAttnRows;
  float* row_alpha = row_sum + kAttnRows;
  __shared__ int64_t row_begin_key[kAttnRows], row_end_key[kAttnRows];

  RowLengths len;
  if (!row_lengths(g, seqlens, total, b, nullptr, false, &len)) return;  // reported by gqa_present_kernel
  const T* present_k_head = present_k + (b * g.kv_heads + kvh) * g.present * d;
  const T* present_v_head = present_v + (b * g.kv_heads + kvh) * g.present * d;

  // This tile's queries in float, rotated; each row's key range [begin, end).
  for (int64_t e = threadIdx.x; e < rows * d; e += blockDim.x) {
    const int64_t r = e / d, i = e % d;
    const int64_t row = row_begin + r;
    const int64_t s = row / group, h = kvh * group + row % group;
    const T* q_row = query + (b * g.seq + s) * g.token_stride + h * d;
    float v = load(q_row, i);
    if (g.do_rotary) {
      const int64_t position = token_position(len, s);
      if (position >= 0 && position < g.rotary_positions) {  // else reported by gqa_present_kernel
        v = rotated(q_row, i, cos + position * g.rotary_width, sin + position * g.rotary_width, g.rotary_dim,
                    g.interleaved);
      }
    }
    q[r * d + i] = v;
  }
  if (threadIdx.x < kAttnRows) {
    const int64_t r = threadIdx.x;
    const int64_t s = (row_begin + r) / group;
    const int64_t end = imin(len.past_len + s + 1, len.valid);
    row_end_key[r] = r < rows ? end : 0;
    row_begin_key[r] = r < rows && g.window > 0 ? imax(0, end - g.window) : 0;
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
  }
  __syncthreads();
  int64_t key_begin = row_begin_key[0], key_end = 0;
  for (int64_t r = 0; r < rows; ++r) {
    key_begin = imin(key_begin, row_begin_key[r]);
    key_end = imax(key_end, row_end_key[r]);
  }

  float acc[kAccPerThread];
#pragma unroll
  for (int j = 0; j < kAccPerThread; ++j) acc[j] = 0.0f;

  for (int64_t t0 = key_begin; t0 < key_end; t0 += chunk) {
    const int64_t keys = imin(chunk, key_end - t0);
    for (int64_t e = threadIdx.x; e < keys * d; e += blockDim.x) {
      kv[(e / d) * kv_pitch + e % d] = load(present_k_head, (t0 + e / d) * d + e % d);
    }
    __syncthreads();
    // Scores, masked to each row's range.
    for (int64_t e = threadIdx.x; e < kAttnRows * chunk; e += blockDim.x) {
      const int64_t r = e / chunk, t = e % chunk;
      float score = -INFINITY;
      const int64_t key = t0 + t;
      if (r < rows && t < keys && key >= row_begin_key[r] && key < row_end_key[r]) {
        const float* qr = q + r * d;
        const float* kr = kv + t * kv_pitch;
        float dot = 0.0f;
        for (int64_t i = 0; i < d; ++i) dot += qr[i] * kr[i];
        score = dot * g.scale;
        if (g.softcap > 0.0f) score = g.softcap * tanhf(score / g.softcap);
      }
      probs[r * kAttnKeys + t] = score;
    }
    __syncthreads();
    // Online softmax: new running max, the rescale factor of what was accumulated, the chunk's weights.
    if (threadIdx.x < kAttnRows) {
      const int64_t r = threadIdx.x;
      float m = row_max[r];
      for (int t = 0; t < chunk; ++t) m = fmaxf(m, probs[r * kAttnKeys + t]);
      const float alpha = m == -INFINITY ? 1.0f : expf(row_max[r] - m);
      float sum = row_sum[r] * alpha;
      for (int t = 0; t < chunk; ++t) {
        const float s = probs[r * kAttnKeys + t];
        const float w = s == -INFINITY ? 0.0f : expf(s - m);
        probs[r * kAttnKeys + t] = w;
        sum += w;
      }
      row_max[r] = m;
      row_sum[r] = sum;
      row_alpha[r] = alpha;
    }
    for (int64_t e = threadIdx.x; e < keys * d; e += blockDim.x) {
      kv[(e / d) * kv_pitch + e % d] = load(present_v_head, (t0 + e / d) * d + e % d);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kAccPerThread; ++j) {
      const int64_t e = threadIdx.x + static_cast<int64_t>(j) * kAttnThreads;
      if (e < rows * d) {
        const int64_t r = e / d, i = e % d;
        float a = acc[j] * row_alpha[r];
        for (int64_t t = 0; t < keys; ++t) a += probs[r * kAttnKeys + t] * kv[t * kv_pitch + i];
        acc[j] = a;
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < kAccPerThread; ++j) {
    const int64_t e = threadIdx.x + static_cast<int64_t>(j) * kAttnThreads;
    if (e < rows * d) {
      const int64_t r = e / d, i = e % d;
      const int64_t row = row_begin + r;
      const int64_t s = row / group, h = kvh * group + row % group;
      store(out, (b * g.seq + s) * g.heads * d + h * d + i, acc[j] / row_sum[r]);
    }
  }
}

#if defined(HIPDNN_EP_PLATFORM_CUDA)
// Prefill in float16 on tensor cores (CUDA, sm_80 and later; mma.sync through inline PTX, which
// Hopper runs as well): one block of kFlashWarps warps per (tile of kFlashRows query rows, KV head,
// batch row), the rows ordered as in gqa_attention_kernel; each warp owns 16 rows. The queries are
// rotated, rounded to half and kept in registers as MMA fragments; keys and values come in tiles of
// kFlashKeys rows through shared memory (cp.async, the next tile's keys loading while the current
// values are used, and the reverse); S = Q K^T and O += P V are m16n8k16 MMAs with float
// accumulators, and the online softmax runs on the S fragments in registers (base-2 exponentials,
// P rounded to half for the second product). Tiles of keys outside every row's causal / window range
// are skipped; the last tiles of the diagonal are masked per element. Blocks start from the last
// query tile, which has the most keys.
constexpr int kFlashWarps = 4;
constexpr int kFlashRows = 16 * kFlashWarps;  // query rows per block
constexpr int kFlashKeys = 64;                // keys per tile (== kFlashRows: the query tile is staged in the key tile)
constexpr int kFlashPad = 8;                  // halfs after each shared row: ldmatrix rows fall in distinct banks

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// c += a (16 x 16, row-major fragment) * b (16 x 8, column-major fragment), float accumulators.
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16 bytes global -> shared, asynchronously; zeros when !valid (nothing is read then).
__device__ __forceinline__ void copy16_async(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copy_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::); }

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <int D>
__global__ void __launch_bounds__(kFlashWarps * 32) gqa_flash_kernel(GqaParams g, const __half* query,
                                                                     const __half* cos, const __half* sin,
                                                                     const int32_t* seqlens, const int32_t* total,
                                                                     const __half* present_k,
                                                                     const __half* present_v, __half* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kPitch = D + kFlashPad;
  constexpr int kChunks = D / 8;  // 16-byte pieces of a row
  __shared__ __align__(16) __half k_tile[kFlashKeys * kPitch];
  __shared__ __align__(16) __half v_tile[kFlashKeys * kPitch];
  const int64_t group = g.heads / g.kv_heads;
  const int64_t b = blockIdx.z, kvh = blockIdx.y;
  const int64_t row_begin = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kFlashRows;  // rows r = s * group + j
  const int64_t rows = g.seq * group;
  RowLengths len;
  if (!row_lengths(g, seqlens, total, b, nullptr, false, &len)) return;  // reported by gqa_present_kernel
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Keys [begin, end) of the rows of token s; both grow with s.
  auto end_of = [&](int64_t s) { return static_cast<int>(imin(len.past_len + s + 1, len.valid)); };
  auto begin_of = [&](int end) { return g.window > 0 ? (end > g.window ? end - static_cast<int>(g.window) : 0) : 0; };

  // The tile's queries, rotated, as half, staged in k_tile: a thread per 8 elements of a row.
  for (int t = threadIdx.x; t < kFlashRows * kChunks; t += kFlashWarps * 32) {
    const int r = t / kChunks, c0 = (t % kChunks) * 8;
    const int64_t row = row_begin + r;
    float v[8] = {};
    if (row < rows) {
      const int64_t s = row / group, h = kvh * group + row % group;
      const int64_t position = g.do_rotary ? token_position(len, s) : 0;
      const bool rotate = g.do_rotary && position >= 0 && position < g.rotary_positions;  // else reported
      rotated8(query + (b * g.seq + s) * g.token_stride + h * D, c0, D, cos + position * g.rotary_width,
               sin + position * g.rotary_width, g.rotary_dim, g.interleaved, rotate, v);
    }
    uint4 packed;
    packed.x = pack_half2(v[0], v[1]);
    packed.y = pack_half2(v[2], v[3]);
    packed.z = pack_half2(v[4], v[5]);
    packed.w = pack_half2(v[6], v[7]);
    *reinterpret_cast<uint4*>(&k_tile[r * kPitch + c0]) = packed;
  }
  __syncthreads();
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int r = warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
    ldmatrix_x4(qf[kk], shared_address(&k_tile[r * kPitch + kk * 16 + (lane / 16) * 8]));
  }
  __syncthreads();  // k_tile now holds keys

  // This thread's two rows (lane / 4 and lane / 4 + 8 of the warp's 16) and their key ranges; the
  // warp's and the block's ranges. Rows past the last one have none.
  int row_lo[2], row_hi[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int64_t row = row_begin + warp * 16 + lane / 4 + 8 * k;
    row_hi[k] = row < rows ? end_of(row / group) : 0;
    row_lo[k] = row < rows ? begin_of(row_hi[k]) : 0;
  }
  const int64_t warp_first = row_begin + warp * 16, warp_last = imin(warp_first + 16, rows) - 1;
  const bool warp_rows = warp_first < rows;
  const int warp_lo = warp_rows ? begin_of(end_of(warp_first / group)) : 0;
  const int warp_hi = warp_rows ? end_of(warp_last / group) : 0;
  const int full_lo = warp_rows ? begin_of(end_of(warp_last / group)) : 0;  // keys every row of the warp sees
  const int full_hi = warp_rows ? end_of(warp_first / group) : 0;
  const int block_lo = begin_of(end_of(row_begin / group));
  const int block_hi = end_of((imin(row_begin + kFlashRows, rows) - 1) / group);

  const __half* k_head = present_k + (b * g.kv_heads + kvh) * g.present * D;
  const __half* v_head = present_v + (b * g.kv_heads + kvh) * g.present * D;
  auto load_tile = [&](__half* tile, const __half* src, int t0) {
    if (t0 < block_hi) {
      for (int c = threadIdx.x; c < kFlashKeys * kChunks; c += kFlashWarps * 32) {
        const int r = c / kChunks, col = (c % kChunks) * 8;
        const bool valid = t0 + r < block_hi;
        copy16_async(shared_address(&tile[r * kPitch + col]), src + (valid ? static_cast<int64_t>(t0 + r) * D + col : 0),
                     valid);
      }
    }
    copy_async_commit();  // possibly empty: one group per tile and operand keeps the waits uniform
  };

  const float log2e = 1.4426950408889634f;
  const bool softcap = g.softcap > 0.0f;
  const float score_scale = softcap ? g.scale : g.scale * log2e;
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  load_tile(k_tile, k_head, block_lo);
  load_tile(v_tile, v_head, block_lo);
  for (int t0 = block_lo; t0 < block_hi; t0 += kFlashKeys) {
    copy_async_wait_one();  // this tile's keys are in (its values may still be loading)
    __syncthreads();
    const bool active = t0 < warp_hi && t0 + kFlashKeys > warp_lo;
    float s[kFlashKeys / 8][4];
    if (active) {
#pragma unroll
      for (int n = 0; n < kFlashKeys / 8; ++n) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk += 2) {
          uint32_t kb[4];
          ldmatrix_x4(kb, shared_address(&k_tile[(n * 8 + lane % 8) * kPitch + kk * 16 + (lane / 8) * 8]));
          mma_16816(s[n], qf[kk], kb[0], kb[1]);
          mma_16816(s[n], qf[kk + 1], kb[2], kb[3]);
        }
      }
      // Scores in base-2 units, softcapped, masked to each row's range.
      const bool mask = !(t0 >= full_lo && t0 + kFlashKeys <= full_hi);
#pragma unroll
      for (int n = 0; n < kFlashKeys / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[n][e] * score_scale;
          if (softcap) x = g.softcap * tanhf(x / g.softcap) * log2e;
          const int key = t0 + n * 8 + (lane % 4) * 2 + (e % 2);
          if (mask && (key < row_lo[e / 2] || key >= row_hi[e / 2])) x = -INFINITY;
          s[n][e] = x;
        }
      }
      // Online softmax per row: the quad of lanes sharing a row reduces its max over shuffles.
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        float mx = m[k];
#pragma unroll
        for (int n = 0; n < kFlashKeys / 8; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * k], s[n][2 * k + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float base = mx == -INFINITY ? 0.0f : mx;  // a row with no key yet
        const float alpha = exp2f(m[k] - base);
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < kFlashKeys / 8; ++n) {
          s[n][2 * k] = exp2f(s[n][2 * k] - base);
          s[n][2 * k + 1] = exp2f(s[n][2 * k + 1] - base);
          sum += s[n][2 * k] + s[n][2 * k + 1];
        }
        l[k] = l[k] * alpha + sum;  // this lane's part of the row's sum; the quad is summed at the end
        m[k] = mx;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o[n][2 * k] *= alpha;
          o[n][2 * k + 1] *= alpha;
        }
      }
    }
    __syncthreads();  // every warp is done with k_tile
    load_tile(k_tile, k_head, t0 + kFlashKeys);
    copy_async_wait_one();  // this tile's values are in
    __syncthreads();
    if (active) {
#pragma unroll
      for (int kk = 0; kk < kFlashKeys / 16; ++kk) {
        const uint32_t a[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                               pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                               pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int n = 0; n < D / 8; n += 2) {
          uint32_t vb[4];
          ldmatrix_x4_trans(vb, shared_address(&v_tile[(kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kPitch + n * 8 +
                                                       (lane / 16) * 8]));
          mma_16816(o[n], a, vb[0], vb[1]);
          mma_16816(o[n + 1], a, vb[2], vb[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with v_tile
    load_tile(v_tile, v_head, t0 + kFlashKeys);
  }
  asm volatile("cp.async.wait_all;\n" ::);

#pragma unroll
  for (int k = 0; k < 2; ++k) {
    float sum = l[k];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int64_t row = row_begin + warp * 16 + lane / 4 + 8 * k;
    if (row >= rows) continue;
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    const int64_t s_tok = row / group, h = kvh * group + row % group;
    __half* o_row = out + (b * g.seq + s_tok) * g.heads * D + h * D;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      *reinterpret_cast<__half2*>(o_row + n * 8 + (lane % 4) * 2) =
          __floats2half2_rn(o[n][2 * k] * inv, o[n][2 * k + 1] * inv);
    }
  }
#endif
}

#endif  // HIPDNN_EP_PLATFORM_CUDA

// Decode: gqa_decode_kernel over the splits of each row's keys, then the merge when there are several.
template <typename T, int G>
void launch_decode_heads(hipdnn_ep_state_t* state, const GqaParams& g, const T* query, const T* cos, const T* sin,
                         const int32_t* seqlens, const int32_t* total, const T* present_k, const T* present_v, T* out,
                         DecodeSplit split, hipStream_t stream) {
  const int64_t group = g.heads / g.kv_heads;
  const int64_t head_blocks = (group + G - 1) / G;
  std::unique_ptr<TempBuffer> partial;
  float* partial_data = nullptr;
  if (split.splits > 1) {
    partial = std::make_unique<TempBuffer>(
        state, static_cast<uint64_t>(g.batch * g.heads * split.splits * (g.head_size + 2)) * sizeof(float));
    partial_data = static_cast<float*>(partial->data());
  }
  const dim3 grid(static_cast<unsigned>(split.splits), static_cast<unsigned>(g.kv_heads * head_blocks),
                  static_cast<unsigned>(g.batch));
  gqa_decode_kernel<T, G><<<grid, kDecodeThreads, 0, stream>>>(g, query, cos, sin, seqlens, total, present_k,
                                                               present_v, split, partial_data, out);
  check_launch("group_query_attention (decode)");
  if (split.splits > 1) {
    gqa_decode_merge_kernel<<<dim3(static_cast<unsigned>(g.heads), static_cast<unsigned>(g.batch)), 128, 0,
                              stream>>>(g, seqlens, total, partial_data, split.keys_per_split, split.splits, out);
    check_launch("group_query_attention (decode merge)");
  }
}

template <typename T>
void launch_decode(hipdnn_ep_state_t* state, const GqaParams& g, const T* query, const T* cos, const T* sin,
                   const int32_t* seqlens, const int32_t* total, const T* present_k, const T* present_v, T* out,
                   hipStream_t stream) {
  DecodeSplit split{};
  split.lanes = 1;
  while (split.lanes * 8 < g.head_size) split.lanes *= 2;
  split.vector = (g.head_size * static_cast<int64_t>(sizeof(T))) % 16 == 0 && aligned(present_k, 16) &&
                 aligned(present_v, 16);
  const int64_t group = g.heads / g.kv_heads;
  int heads = 1;  // query heads per block: a power of two, at most kDecodeHeads
  while (heads < group && heads < kDecodeHeads) heads *= 2;
  const int64_t pass = static_cast<int64_t>(kDecodeThreads / split.lanes) * kDecodeBatch;
  const int64_t keys = g.window > 0 ? std::min(g.present, g.window) : g.present;  // per row at most
  if (keys <= pass * kDecodeSingleBatches) {
    split.keys_per_split = (keys + pass - 1) / pass * pass;
  } else {
    // Enough splits for about two blocks per multiprocessor, each a whole number of batches.
    int sms = 0;
    if (hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, gpu_device(state).ordinal()) != hipSuccess ||
        sms < 1) {
      sms = 1;
    }
    const int64_t blocks = g.batch * g.kv_heads * ((group + heads - 1) / heads);
    const int64_t wanted = std::min<int64_t>(kDecodeMaxSplits, std::max<int64_t>(1, (2 * sms + blocks - 1) / blocks));
    split.keys_per_split = ((keys + wanted - 1) / wanted + pass - 1) / pass * pass;
  }
  split.splits = (keys + split.keys_per_split - 1) / split.keys_per_split;
  switch (heads) {
    case 1: return launch_decode_heads<T, 1>(state, g, query, cos, sin, seqlens, total, present_k, present_v, out, split, stream);
    case 2: return launch_decode_heads<T, 2>(state, g, query, cos, sin, seqlens, total, present_k, present_v, out, split, stream);
    case 4: return launch_decode_heads<T, 4>(state, g, query, cos, sin, seqlens, total, present_k, present_v, out, split, stream);
    default: return launch_decode_heads<T, kDecodeHeads>(state, g, query, cos, sin, seqlens, total, present_k, present_v, out, split, stream);
  }
}

#if defined(HIPDNN_EP_PLATFORM_CUDA)
// Prefill on tensor cores where it applies (float16, head size 64 or 128, 16-byte aligned caches, a
// GPU of sm_80 or later); false: the caller runs gqa_attention_kernel.
template <int D>
bool launch_flash_for(const GqaParams& g, const __half* query, const __half* cos, const __half* sin,
                      const int32_t* seqlens, const int32_t* total, const __half* present_k, const __half* present_v,
                      __half* out, hipStream_t stream) {
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, gqa_flash_kernel<D>) != cudaSuccess || attributes.binaryVersion < 80) {
    (void)cudaGetLastError();
    return false;
  }
  const int64_t group = g.heads / g.kv_heads;
  const dim3 grid(static_cast<unsigned>((g.seq * group + kFlashRows - 1) / kFlashRows),
                  static_cast<unsigned>(g.kv_heads), static_cast<unsigned>(g.batch));
  gqa_flash_kernel<D><<<grid, kFlashWarps * 32, 0, stream>>>(g, query, cos, sin, seqlens, total, present_k, present_v,
                                                             out);
  check_launch("group_query_attention (tensor cores)");
  return true;
}

bool launch_flash(const GqaParams& g, const __half* query, const __half* cos, const __half* sin,
                  const int32_t* seqlens, const int32_t* total, const __half* present_k, const __half* present_v,
                  __half* out, hipStream_t stream) {
  if (!aligned(present_k, 16) || !aligned(present_v, 16) || !aligned(out, 4) || g.present > (int64_t{1} << 30)) {
    return false;
  }
  switch (g.head_size) {
    case 64: return launch_flash_for<64>(g, query, cos, sin, seqlens, total, present_k, present_v, out, stream);
    case 128: return launch_flash_for<128>(g, query, cos, sin, seqlens, total, present_k, present_v, out, stream);
    default: return false;
  }
}
#endif

}  // namespace

void matmul_nbits(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  NbitsArgs p{};
  p.k = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_K];
  p.n = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_N];
  p.block = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_BLOCK_SIZE];
  p.m = element_count(args.inputs[0]) / p.k;
  if (element_count(args.outputs[0]) == 0) return;
  p.blocks = (p.k + p.block - 1) / p.block;
  p.col_bytes = p.blocks * (p.block / 2);
  p.zp_stride = (p.blocks + 1) / 2;
  p.b = static_cast<const uint8_t*>(args.inputs[1].data);
  p.zp = args.n_inputs > 3 && is_present(args.inputs[3]) ? static_cast<const uint8_t*>(args.inputs[3].data) : nullptr;
  const bool has_bias = args.n_inputs > 4 && is_present(args.inputs[4]);
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "matmul_nbits", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = static_cast<const T*>(args.inputs[0].data);
    const T* scales = static_cast<const T*>(args.inputs[2].data);
    const T* bias = has_bias ? static_cast<const T*>(args.inputs[4].data) : nullptr;
    T* y = static_cast<T*>(args.outputs[0].data);
    if (p.m <= kGemvMaxRows) {
#if defined(HIPDNN_EP_PLATFORM_CUDA)
      if constexpr (std::is_same_v<T, __half>) {
        if (p.m <= kMmaRows && p.block % 128 == 0 && aligned(p.b, 16) && mma_device()) {
          const auto grid = static_cast<unsigned>((p.n + kMmaColumns - 1) / kMmaColumns);
          const int64_t shared = p.col_bytes * 4;  // steps of 128 halves
          if (aligned(a, 16) && p.k % 8 == 0) {
            if (p.m == 1 && shared <= kMmaSharedA) {
              gemv_mma_nbits_kernel<true, true><<<grid, 32 * kMmaWarps, shared, stream>>>(p, a, scales, bias, y);
            } else {
              gemv_mma_nbits_kernel<true, false><<<grid, 32 * kMmaWarps, 0, stream>>>(p, a, scales, bias, y);
            }
          } else {
            gemv_mma_nbits_kernel<false, false><<<grid, 32 * kMmaWarps, 0, stream>>>(p, a, scales, bias, y);
          }
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
    // Prefill: y = A W^T a chunk of W's columns at a time (W [N, K] dequantized into a bounded
    // temporary), the bias first written into y and added through beta = 1.
    const int64_t columns = dequant_chunk_columns(p.n, p.k, sizeof(T));
    TempBuffer w(state, static_cast<uint64_t>(columns * p.k) * sizeof(T));
    if (has_bias) {
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
      g.dtype = args.inputs[0].dtype;
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
      g.beta = has_bias ? 1.0f : 0.0f;
      gpu_device(state).blas().gemm(g, stream);
    }
  });
}

void rms_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_RMS_NORM_INT_ATTR_AXIS]);
  const auto epsilon = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_RMS_NORM_FLOAT_ATTR_EPSILON]);
  const Dims normalized(dims.begin() + static_cast<std::ptrdiff_t>(axis), dims.end());
  const int64_t rows = dims_product(dims, 0, axis);
  const int64_t size = element_count(normalized);
  if (rows == 0 || size == 0) return;
  std::unique_ptr<TempBuffer> scale_holder, skip_holder, bias_holder;
  const void* scale = dense(state, args, 1, normalized, &scale_holder);
  const void* skip = dense(state, args, 2, dims, &skip_holder);
  const void* bias = dense(state, args, 3, normalized, &bias_holder);
  void* sum_out = args.n_outputs > 1 ? args.outputs[1].data : nullptr;
  void* out = args.outputs[0].data;
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(in.dtype, "rms_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    const bool vector = size % kVec == 0 && aligned(in.data, 16) && aligned(scale, 16) && aligned(skip, 16) &&
                        aligned(bias, 16) && aligned(out, 16) && aligned(sum_out, 16);
    const auto* xt = static_cast<const T*>(in.data);
    const auto* st = static_cast<const T*>(scale);
    const auto* kt = static_cast<const T*>(skip);
    const auto* bt = static_cast<const T*>(bias);
    auto* yt = static_cast<T*>(out);
    auto* ot = static_cast<T*>(sum_out);
    int threads_log2 = 0, per_thread = 0;
    const int max_per_thread = vector ? (kNormMaxFloats / kVec < 8 ? kNormMaxFloats / kVec : 8) : 8;
    if (norm_shape(rows, vector ? size / kVec : size, max_per_thread, &threads_log2, &per_thread)) {
      if (vector) {
        launch_rms_norm_rows<T, kVec>(xt, st, kt, bt, yt, ot, rows, size, threads_log2, per_thread, epsilon, stream);
      } else {
        launch_rms_norm_rows<T, 1>(xt, st, kt, bt, yt, ot, rows, size, threads_log2, per_thread, epsilon, stream);
      }
      return;
    }
    const auto grid = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
    rms_norm_kernel<<<grid, kBlock, 0, stream>>>(xt, st, kt, bt, yt, ot, rows, size, epsilon);
  });
  check_launch("rms_norm");
}

void rotary_embedding(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const int64_t n = element_count(in);
  if (n == 0) return;
  const Dims x = dims_of(in);
  const bool interleaved = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_INTERLEAVED] != 0;
  const int64_t num_heads_attr = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_NUM_HEADS];
  const Dims cache = dims_of(args.inputs[2]);
  int64_t rotary_dim = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_ROTARY_EMBEDDING_DIM];
  if (rotary_dim == 0) rotary_dim = 2 * cache[1];
  const bool bnsh = x.size() == 4;
  const int64_t batch = x[0];
  const int64_t seq = bnsh ? x[2] : x[1];
  const int64_t head_size = bnsh ? x[3] : (num_heads_attr > 0 ? x[2] / num_heads_attr : rotary_dim);
  const int64_t heads = bnsh ? x[1] : x[2] / head_size;
  const bool offset_only = element_count(args.inputs[1]) == 1 && !(batch == 1 && seq == 1 && args.inputs[1].rank == 2);
  DataErrorRecord* errors = gpu_device(state).data_errors();
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(in.dtype, "rotary_embedding", [&](auto tag) {
    using T = typename decltype(tag)::type;
    rotary_kernel<<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<const T*>(in.data), static_cast<const int64_t*>(args.inputs[1].data),
        static_cast<const T*>(args.inputs[2].data), static_cast<const T*>(args.inputs[3].data),
        static_cast<T*>(args.outputs[0].data), batch, seq, heads, head_size, rotary_dim, cache[0], cache[1], bnsh,
        offset_only, interleaved, errors);
  });
  check_launch("rotary_embedding");
}

void group_query_attention(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const int64_t* ia = args.int_attrs;
  GqaParams g{};
  const Dims q = dims_of(args.inputs[0]);
  g.batch = q[0];
  g.seq = q[1];
  g.heads = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_NUM_HEADS];
  g.kv_heads = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_KV_NUM_HEADS];
  g.packed = !is_present(args.inputs[1]);
  g.head_size = q[2] / (g.packed ? g.heads + 2 * g.kv_heads : g.heads);
  g.past = is_present(args.inputs[3]) ? args.inputs[3].dims[2] : 0;
  g.present = args.outputs[1].dims[2];
  g.token_stride = g.packed ? (g.heads + 2 * g.kv_heads) * g.head_size : g.heads * g.head_size;
  g.kv_token_stride = g.packed ? g.token_stride : g.kv_heads * g.head_size;
  g.window = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_LOCAL_WINDOW_SIZE];
  g.do_rotary = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_DO_ROTARY] != 0;
  g.interleaved = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_ROTARY_INTERLEAVED] != 0;
  const double scale_attr = args.float_attrs[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_FLOAT_ATTR_SCALE];
  g.scale = scale_attr == 0.0 ? 1.0f / std::sqrt(static_cast<float>(g.head_size)) : static_cast<float>(scale_attr);
  g.softcap = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_FLOAT_ATTR_SOFTCAP]);
  if (g.do_rotary) {
    g.rotary_positions = args.inputs[7].dims[0];
    g.rotary_width = args.inputs[7].dims[1];
    g.rotary_dim = 2 * g.rotary_width;
  }
  // Shared-buffer mode: past and present are one buffer of one length; the valid past is in place.
  const bool shared = g.past > 0 && args.inputs[3].data == args.outputs[1].data &&
                      args.inputs[4].data == args.outputs[2].data && g.past == g.present;
  g.copy_past = !shared;
  g.zero_tail = !shared;
  if (g.head_size > kMaxHeadSize) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "head size " + std::to_string(g.head_size) + " is above the GPU kernel's " +
                                           std::to_string(kMaxHeadSize));
  }
  if (g.batch == 0 || g.seq == 0) return;
  DataErrorRecord* errors = gpu_device(state).data_errors();
  const hipStream_t stream = current_stream(state);
  const auto* seqlens = static_cast<const int32_t*>(args.inputs[5].data);
  const auto* total = static_cast<const int32_t*>(args.inputs[6].data);
  dispatch_float_gpu(args.inputs[0].dtype, "group_query_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto data = [&](int32_t i) { return is_present(args.inputs[i]) ? static_cast<const T*>(args.inputs[i].data) : nullptr; };
    const T* cos = g.do_rotary ? data(7) : nullptr;
    const T* sin = g.do_rotary ? data(8) : nullptr;
    T* present_k = static_cast<T*>(args.outputs[1].data);
    T* present_v = static_cast<T*>(args.outputs[2].data);
    const int64_t cache_pieces = g.batch * g.kv_heads * (shared ? g.seq : g.present) * ((g.head_size + 7) / 8);
    gqa_present_kernel<<<grid_for(cache_pieces), kBlock, 0, stream>>>(
        g, data(0), data(1), data(2), data(3), data(4), seqlens, total, cos, sin, present_k, present_v,
        errors);
    check_launch("group_query_attention (present)");
    T* out = static_cast<T*>(args.outputs[0].data);
    if (g.seq == 1) {
      launch_decode<T>(state, g, data(0), cos, sin, seqlens, total, present_k, present_v, out, stream);
      return;
    }
#if defined(HIPDNN_EP_PLATFORM_CUDA)
    if constexpr (std::is_same_v<T, __half>) {
      if (launch_flash(g, data(0), cos, sin, seqlens, total, present_k, present_v, out, stream)) return;
    }
#endif
    const int64_t group = g.heads / g.kv_heads;
    const dim3 grid(static_cast<unsigned>((g.seq * group + kAttnRows - 1) / kAttnRows),
                    static_cast<unsigned>(g.kv_heads), static_cast<unsigned>(g.batch));
    const int chunk = attention_chunk(g.head_size);
    const size_t shared_bytes = attention_shared_bytes(g.head_size, chunk);
    gqa_attention_kernel<<<grid, kAttnThreads, shared_bytes, stream>>>(g, data(0), cos, sin, seqlens, total, present_k,
                                                                       present_v, out, chunk);
    check_launch("group_query_attention");
  });
}

}  // namespace hipdnn_ep::kernels::gpu
