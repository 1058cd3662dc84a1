// The int4 MatMulNBits decode GEMV on tensor cores (CUDA only); see matmul_nbits.hip for where it runs.
#include <cstdint>

#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/matmul_nbits.h"
#include "kernels/gpu/mma_sm80.h"
#include "kernels/sigmoid.h"

#if defined(HIPDNN_EP_PLATFORM_CUDA)
namespace hipdnn_ep::kernels::gpu {
namespace {

// The decode GEMV on tensor cores (CUDA, float16, 1..kMmaRows rows of A, blocks of a power of two of at
// least 128 elements, or of 32 or 64 with one row of A (see "Blocks under a step" below), B 16-byte
// aligned). A block owns kMmaColumns output columns; its kWarps warps
// split K in steps of 128 elements (one quantization block or part of one) and each warp loads a step's
// B, scales and zero points just before using them (its first step before A is staged, and before the wait
// for the kernel it overlaps where they are the run's weights). In a step, lane
// (g, t) = (lane / 4, lane % 4) loads 16 bytes (32 weights) of columns g and g + 8 at K offset 32 t, turns
// the nibbles into exact halves, and 8 mma.m16n8k16 (W as the 16 x 16 operand, A's rows as the 8 columns
// of the other) sum them times A in float; the step's scales multiply that float sum. K is permuted the
// same way in both operands (pairs of elements 4 apart, as the nibble trick yields them), which a dot
// product does not see. The warps' partial sums meet in shared memory.
//
// Instructions, not only bytes, bound it: Nsight Compute on an H100 had the lm_head GEMV issue on 67% of
// its cycles. So the one-row path (decode at batch 1) spends fewer: the block stages A once, already in
// the mma's operand order, with each step's sums of its even and odd elements, and a nibble q becomes the
// half 1024 + q (even elements) or 64 + q (odd ones) in one logic op, no zero point subtracted: a step
// adds scale * (sum - 1024 * even - 64 * odd - z * (even + odd)). With several rows, A comes from global
// memory and q - z is formed in halves.
//
// Blocks under a step (32 or 64 elements: onnxruntime-genai's model builder quantizes with 32 by default):
// a step then spans kSub = 128 / block blocks, each with its own scale, which cannot multiply a sum the mma
// took over all of them. With one row of A the mma's 8 columns are free: lane t's 32 elements of a step lie
// in sub-block t * kSub / 4, and only the lanes whose column g is that sub-block feed A (the others feed
// zeros), so column n of the mma's result is the sum over sub-block n alone. Lane t then holds sub-blocks 2t
// and 2t + 1 (where below kSub), applies their scales and zero points, and the lanes of a column add up.
//
// Tried and slower: loading the next step before the current one's arithmetic (two steps in registers at
// the 64-register bound; 5-11% on an H200), a ring of 2-4 steps per warp copied by cp.async into shared
// memory (5-25% on an H100: more bytes in flight, but the arithmetic waits for the last of them), two
// steps per round at 80 registers and 3 blocks an SM (no faster), L2 prefetches of the block's columns
// before wait_for_predecessor (a 32-layer decode step 3.46 -> 3.81 ms on an H100), and the block's B moved
// by the bulk-copy (TMA) unit into a ring of 4 stages of 8 steps in shared memory (16 copies of 512 bytes a
// stage, one mbarrier a slot, the first stages asked for before or after wait_for_predecessor): slower at
// every shape on an H200 (us, blocks of 128: qkv 9.2 -> 10.3, gate/up 15.5 -> 20.0, down 16.4 -> 22.9,
// lm_head 108 -> 142), a decode step 2.98 -> 3.29-3.50 ms.
constexpr int kMmaRows = 8;
constexpr int kMmaColumns = 16;
// Warps a block: 8, or 16 where the grid fits one wave of 2 blocks an SM (Llama's o_proj and down_proj on
// an H100 or H200), so that a short grid still has 32 warps an SM. The launch bound keeps 64 registers.
constexpr int kMmaWarps = 8;
constexpr int kMmaWideWarps = 16;
constexpr int kMmaWarpsPerSm = 32;
constexpr int64_t kMmaSharedA = 48 << 10;      // bytes of shared memory for A and its sums, at most

// The one-row path's shared memory: A in operand order (uint4 [step][chunk i][t]: operand_pairs of the 8
// elements at 128 step + 32 t + 8 i), then per step the float pair
// (1024 * even + 64 * odd, even + odd) of its elements' sums, one pair per block of the step (kSub).
__host__ __device__ inline int64_t mma_shared_a_bytes(int64_t steps, int sub) { return steps * (256 + 8 * sub); }


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

// The nibbles q0..q7 of w as halves (1024 + q0, 1024 + q4), (64 + q1, 64 + q5), (1024 + q2, 1024 + q6),
// (64 + q3, 64 + q7): one logic op each (0x6400 is 1024 with ulp 1, 0x5400 64 with ulp 1/16).
__device__ __forceinline__ void nibble_offsets(uint32_t w, uint32_t (&h)[4]) {
  const uint32_t w8 = w >> 8;
  h[0] = and_or<0x000F000Fu, 0x64006400u>(w);
  h[1] = and_or<0x00F000F0u, 0x54005400u>(w);
  h[2] = and_or<0x000F000Fu, 0x64006400u>(w8);
  h[3] = and_or<0x00F000F0u, 0x54005400u>(w8);
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

// The 8 halves (x0, x1), (x2, x3), (x4, x5), (x6, x7) of v as the mma's second operand for the nibble
// pairs' order: (x0, x4), (x1, x5) for the first mma of a word, (x2, x6), (x3, x7) for the second.
__device__ __forceinline__ uint4 operand_pairs(uint4 v) {
  return make_uint4(__byte_perm(v.x, v.z, 0x5410), __byte_perm(v.x, v.z, 0x7632), __byte_perm(v.y, v.w, 0x5410),
                    __byte_perm(v.y, v.w, 0x7632));
}

// One step of K (128 elements) of columns g and g + 8 for lane (g, t): 16 bytes of B each, and the scale
// and zero point of the step's block ([c][0]), or of its sub-blocks 2t and 2t + 1 ([c][0], [c][1]).
struct MmaStep {
  uint4 w[2];
  float scale[2][2];
  uint32_t zero[2][2];
};

// Lane (g, t)'s columns g and g + 8 (the last one for those past N) and where their B starts at K offset
// 32 t.
struct MmaColumns {
  int64_t col[2];
  const uint8_t* b[2];
};

__device__ __forceinline__ void load_scale(const NbitsArgs& p, const __half* scales, int64_t col, int64_t blk,
                                           float& scale, uint32_t& zero) {
  scale = __half2float(scales[col * p.blocks + blk]);
  zero = p.zp == nullptr ? 8u : (p.zp[col * p.zp_stride + blk / 2] >> (4 * (blk & 1))) & 0x0Fu;
}

// The weight of a lane's column c: p's, or, in the gated form, up's (p2) for c = 1.
struct MmaWeights {
  const NbitsArgs& p;
  const __half* scales;
  const NbitsArgs& p2;
  const __half* scales2;
};

// kSub: blocks a step (1: blk_shift is log2 of the steps a block). Lane t loads its sub-blocks' scales.
template <int kSub, bool kGated>
__device__ __forceinline__ void load_mma_step(const MmaWeights& wt, const MmaColumns& cols, int64_t s, int blk_shift,
                                              int t, MmaStep& st) {
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const NbitsArgs& p = kGated && c == 1 ? wt.p2 : wt.p;
    const __half* scales = kGated && c == 1 ? wt.scales2 : wt.scales;
    st.w[c] = load_streamed(cols.b[c] + s * 64);
    if constexpr (kSub == 1) {
      load_scale(p, scales, cols.col[c], s >> blk_shift, st.scale[c][0], st.zero[c][0]);
    } else if (2 * t < kSub) {
      // sub-blocks 2t and 2t + 1: one 4-byte word of scales (the row starts on a word: launch_mma checks the
      // scales' alignment, and p.blocks is a whole number of steps, so even) and one byte of zero points
      const int64_t blk = s * kSub + 2 * t;
      const __half2 pair = *reinterpret_cast<const __half2*>(scales + cols.col[c] * p.blocks + blk);
      st.scale[c][0] = __low2float(pair);
      st.scale[c][1] = __high2float(pair);
      const uint32_t z = p.zp == nullptr ? 0x88u : p.zp[cols.col[c] * p.zp_stride + blk / 2];
      st.zero[c][0] = z & 0x0Fu;
      st.zero[c][1] = z >> 4;
    }
  }
}

// Stages the one row of A in operand order (zeros past K) and each block's sums (see mma_shared_a_bytes).
// Thread i of a pass takes 8 elements, a step's 16 threads sit in one half-warp, and the 16 / kSub of one
// block add up their sums.
template <int kWarps, int kSub>
__device__ __forceinline__ void stage_row(const NbitsArgs& p, const __half* a, int64_t steps, uint4* staged,
                                          float2* sums) {
  constexpr int kThreadsPerSum = 16 / kSub;
  const auto* src = reinterpret_cast<const uint4*>(a);
  for (int64_t base = 0; base < steps * 16; base += 32 * kWarps) {  // every thread runs every pass
    const int64_t i = base + threadIdx.x;
    const bool inside = i < steps * 16;
    const uint4 v = inside && i * 8 < p.k ? __ldg(src + i) : make_uint4(0, 0, 0, 0);
    if (inside) {
      const int64_t step = i / 16, chunk = i % 4, t = (i / 4) % 4;
      staged[step * 16 + chunk * 4 + t] = operand_pairs(v);
    }
    const float2 e01 = __half22float2(bits_half2(v.x)), e23 = __half22float2(bits_half2(v.y));
    const float2 e45 = __half22float2(bits_half2(v.z)), e67 = __half22float2(bits_half2(v.w));
    float even = (e01.x + e23.x) + (e45.x + e67.x), odd = (e01.y + e23.y) + (e45.y + e67.y);
#pragma unroll
    for (int width = kThreadsPerSum / 2; width >= 1; width /= 2) {
      even += __shfl_xor_sync(0xFFFFFFFFu, even, width);
      odd += __shfl_xor_sync(0xFFFFFFFFu, odd, width);
    }
    if (inside && i % kThreadsPerSum == 0) {
      sums[i / kThreadsPerSum] = make_float2(1024.0f * even + 64.0f * odd, even + odd);
    }
  }
}

// kVectorA: A is 16-byte aligned and K % 8 == 0. kSharedA: one row of A, staged in shared memory once per
// block while the first step of B is in flight. kSub: blocks a step (1, or 2 and 4 with kSharedA).
// kGated: y = SiLU(A x p's weight) * (A x p2's weight) (matmul_nbits_silu_mul; no bias; blocks of 128 or
// more): a block owns kMmaColumns / 2 output columns, its mma rows g the gate's and rows g + 8 up's of the
// same columns, so a lane's two columns meet in the epilogue. `tile`: the block's kOwned output columns.
template <int kWarps, bool kVectorA, bool kSharedA, int kSub, bool kGated>
__device__ __forceinline__ void gemv_mma_tile(const NbitsArgs& p, const __half* a, const __half* scales,
                                              const __half* bias, __half* y, const NbitsArgs& p2,
                                              const __half* scales2, int64_t tile) {
  static_assert(kSub == 1 || kSharedA, "blocks under a step need the one-row path");
  static_assert(kSub == 1 || !kGated, "the gated form takes blocks of 128 or more");
  constexpr int kOwned = kGated ? kMmaColumns / 2 : kMmaColumns;  // output columns a block writes
  extern __shared__ uint4 shared_a[];  // kSharedA: mma_shared_a_bytes(steps, kSub)
  __shared__ float partial[kWarps][kMmaColumns][kMmaRows];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t col0 = tile * kOwned;
  const MmaWeights wt{p, scales, p2, scales2};
  MmaColumns cols{};
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    cols.col[c] = imin(col0 + g + (kGated ? 0 : 8 * c), p.n - 1);  // past N: computed, not stored
    cols.b[c] = (kGated && c == 1 ? p2.b : p.b) + cols.col[c] * p.col_bytes + t * 16;
  }
  const int64_t steps = p.col_bytes / 64;
  const int blk_shift = kSub == 1 ? __ffsll(p.block / 128) - 1 : 0;
  // kSub > 1: this lane feeds A to the mma where its column g is the sub-block of its elements
  const bool feeds_a = kSub == 1 || g == t * kSub / 4;
  float col_acc[2] = {0.0f, 0.0f};  // kSub > 1: columns g and g + 8 over this lane's sub-blocks
  auto* const sums = reinterpret_cast<float2*>(shared_a + steps * 16);  // kSharedA
  // kSharedA false: the row of A in the mma's column g.
  const __half* const x = a + imin(g, p.m - 1) * p.k;
  // Launched overlapped: A is the predecessor's output. The run's weights are not (holds_run_weights), so
  // their first step may be in flight while the predecessor ends.
  const bool early = p.constant_weights && p2.constant_weights;
  MmaStep st;
  if (early && warp < steps) load_mma_step<kSub, kGated>(wt, cols, warp, blk_shift, t, st);
  wait_for_predecessor();
  allow_dependents();
  if (!early && warp < steps) load_mma_step<kSub, kGated>(wt, cols, warp, blk_shift, t, st);
  if constexpr (kSharedA) {
    stage_row<kWarps, kSub>(p, a, steps, shared_a, sums);
    __syncthreads();
  }
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t s = warp; s < steps; s += kWarps) {
    if (s != warp) load_mma_step<kSub, kGated>(wt, cols, s, blk_shift, t, st);
    const uint32_t words[2][4] = {{st.w[0].x, st.w[0].y, st.w[0].z, st.w[0].w},
                                  {st.w[1].x, st.w[1].y, st.w[1].z, st.w[1].w}};
    float d[2][4] = {};  // two chains of 4 mma
    if constexpr (kSharedA) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t lo[4], hi[4];  // columns g and g + 8
        nibble_offsets(words[0][i], lo);
        nibble_offsets(words[1][i], hi);
        const uint4 v = feeds_a ? shared_a[s * 16 + i * 4 + t] : make_uint4(0, 0, 0, 0);
        mma_16816(d[0], {lo[0], hi[0], lo[1], hi[1]}, v.x, v.y);
        mma_16816(d[1], {lo[2], hi[2], lo[3], hi[3]}, v.z, v.w);
      }
      if constexpr (kSub == 1) {
        const float2 sum = sums[s];
        const float base[2] = {sum.x + static_cast<float>(st.zero[0][0]) * sum.y,
                               sum.x + static_cast<float>(st.zero[1][0]) * sum.y};
        acc[0] += (d[0][0] + d[1][0] - base[0]) * st.scale[0][0];
        acc[1] += (d[0][1] + d[1][1] - base[0]) * st.scale[0][0];
        acc[2] += (d[0][2] + d[1][2] - base[1]) * st.scale[1][0];
        acc[3] += (d[0][3] + d[1][3] - base[1]) * st.scale[1][0];
      } else {
        // d[.][2c + j]: column g + 8c of the mma's result column 2t + j, the sum over sub-block 2t + j
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          if (2 * t + j < kSub) {
            const float2 sum = sums[s * kSub + 2 * t + j];
#pragma unroll
            for (int c = 0; c < 2; ++c) {
              const float base = sum.x + static_cast<float>(st.zero[c][j]) * sum.y;
              col_acc[c] += (d[0][2 * c + j] + d[1][2 * c + j] - base) * st.scale[c][j];
            }
          }
        }
      }
    } else {
      const int64_t k0 = s * 128 + t * 32;
      uint4 xs[4];  // (x0, x1), (x2, x3), (x4, x5), (x6, x7) of each 8; loaded before the arithmetic
#pragma unroll
      for (int i = 0; i < 4; ++i) xs[i] = load8_half<kVectorA>(x, k0 + 8 * i, p.k);
      __half2 zlo[2], zhi[2];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        zlo[c] = bits_half2((0x6400u | st.zero[c][0]) * 0x00010001u);
        zhi[c] = __hsub2(__float2half2_rn(960.0f), zlo[c]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t lo[4], hi[4];  // columns g and g + 8
        nibble_pairs(words[0][i], zlo[0], zhi[0], lo);
        nibble_pairs(words[1][i], zlo[1], zhi[1], hi);
        const uint4 v = operand_pairs(xs[i]);
        mma_16816(d[0], {lo[0], hi[0], lo[1], hi[1]}, v.x, v.y);
        mma_16816(d[1], {lo[2], hi[2], lo[3], hi[3]}, v.z, v.w);
      }
      acc[0] += (d[0][0] + d[1][0]) * st.scale[0][0];
      acc[1] += (d[0][1] + d[1][1]) * st.scale[0][0];
      acc[2] += (d[0][2] + d[1][2]) * st.scale[1][0];
      acc[3] += (d[0][3] + d[1][3]) * st.scale[1][0];
    }
  }
  if constexpr (kSub > 1) {  // the one row: each column's sum over the 4 lanes t, as row 0
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      col_acc[c] += __shfl_xor_sync(0xFFFFFFFFu, col_acc[c], 1);
      col_acc[c] += __shfl_xor_sync(0xFFFFFFFFu, col_acc[c], 2);
    }
    acc[0] = col_acc[0];
    acc[2] = col_acc[1];
  }
  // acc[0], acc[1]: column g, rows 2t and 2t + 1; acc[2], acc[3]: column g + 8.
  partial[warp][g][2 * t] = acc[0];
  partial[warp][g][2 * t + 1] = acc[1];
  partial[warp][g + 8][2 * t] = acc[2];
  partial[warp][g + 8][2 * t + 1] = acc[3];
  __syncthreads();
  if (threadIdx.x < kOwned * kMmaRows) {
    const int c = threadIdx.x / kMmaRows, r = threadIdx.x % kMmaRows;
    const int64_t column = col0 + c;
    if (r < p.m && column < p.n) {
      float sum = bias != nullptr ? __half2float(bias[column]) : 0.0f;
#pragma unroll
      for (int wi = 0; wi < kWarps; ++wi) sum += partial[wi][c][r];
      if constexpr (kGated) {
        float up = 0.0f;
#pragma unroll
        for (int wi = 0; wi < kWarps; ++wi) up += partial[wi][c + 8][r];
        sum = sum * sigmoid(sum) * up;
      }
      y[r * p.n + column] = __float2half_rn(sum);
    }
  }
}

// The kernel of one form (gemv_mma_tile's parameters). kPaired (one row, blocks under a step; not gated):
// two products of the same shape in one grid, p's columns into y by the first half of the blocks and p2's
// into y2 by the second half (matmul_nbits_silu_mul's gate and up, one launch and one tail instead of two).
template <int kWarps, bool kVectorA, bool kSharedA, int kSub, bool kGated, bool kPaired>
__global__ void __launch_bounds__(32 * kWarps, kMmaWarpsPerSm / kWarps)
    gemv_mma_nbits_kernel(NbitsArgs p, const __half* a, const __half* scales, const __half* bias, __half* y,
                          NbitsArgs p2, const __half* scales2, __half* y2) {
  static_assert(!(kPaired && kGated), "the paired and gated forms are two ways to run gate and up");
  if constexpr (kPaired) {
    const int64_t first = (p.n + kMmaColumns - 1) / kMmaColumns;  // the blocks of p's columns
    if (blockIdx.x >= first) {
      gemv_mma_tile<kWarps, kVectorA, kSharedA, kSub, false>(p2, a, scales2, nullptr, y2, p2, scales2,
                                                              blockIdx.x - first);
      return;
    }
  }
  gemv_mma_tile<kWarps, kVectorA, kSharedA, kSub, kGated>(p, a, scales, bias, y, p2, scales2, blockIdx.x);
}

// One call of the kernel: p, a, scales, bias and y; in the gated form also up's weight (p2, scales2), in the
// paired form also its output (y2).
struct MmaLaunch {
  NbitsArgs p;
  const __half* a;
  const __half* scales;
  const __half* bias;
  __half* y;
  NbitsArgs p2;
  const __half* scales2;
  __half* y2;
};

// Launches one form of the kernel (`blocks` blocks) where the device runs its tensor-core code; false where
// it does not.
template <int kWarps, bool kGated, bool kPaired, bool kVectorA, bool kSharedA, int kSub = 1>
bool launch_form(const MmaLaunch& l, int64_t blocks, int64_t shared_bytes, hipStream_t stream) {
  constexpr auto kKernel = gemv_mma_nbits_kernel<kWarps, kVectorA, kSharedA, kSub, kGated, kPaired>;
  if (!runs_sm80_code<kKernel>()) return false;
  launch_overlapped<kKernel>(static_cast<unsigned>(blocks), 32 * kWarps, static_cast<size_t>(shared_bytes), stream,
                             l.p, l.a, l.scales, l.bias, l.y, l.p2, l.scales2, l.y2);
  return true;
}

// Blocks a step of 128 elements: 1 for blocks of 128 or more, 2 or 4 for blocks of 64 or 32.
inline int blocks_a_step(const NbitsArgs& p) { return p.block >= 128 ? 1 : static_cast<int>(128 / p.block); }

template <int kWarps, bool kGated, bool kPaired>
bool launch_warps(const MmaLaunch& l, int64_t blocks, hipStream_t stream) {
  const NbitsArgs& p = l.p;
  const int64_t steps = p.col_bytes / 64;
  if constexpr (!kGated) {  // launch_mma admits blocks under a step only where they take this path
    switch (blocks_a_step(p)) {
      case 2:
        return launch_form<kWarps, kGated, kPaired, true, true, 2>(l, blocks, mma_shared_a_bytes(steps, 2), stream);
      case 4:
        return launch_form<kWarps, kGated, kPaired, true, true, 4>(l, blocks, mma_shared_a_bytes(steps, 4), stream);
      default:
        break;
    }
  }
  if constexpr (kPaired) {
    return false;  // launch_mma admits the paired form only for blocks under a step
  } else {
    if (!aligned(l.a, 16) || p.k % 8 != 0) return launch_form<kWarps, kGated, false, false, false>(l, blocks, 0, stream);
    const int64_t shared = mma_shared_a_bytes(steps, 1);
    if (p.m == 1 && shared <= kMmaSharedA) {
      return launch_form<kWarps, kGated, false, true, true>(l, blocks, shared, stream);
    }
    return launch_form<kWarps, kGated, false, true, false>(l, blocks, 0, stream);
  }
}

template <bool kGated, bool kPaired>
bool launch_mma(const MmaLaunch& l, int multiprocessors, hipStream_t stream) {
  const NbitsArgs& p = l.p;
  constexpr bool kTwoWeights = kGated || kPaired;
  // p.block is a power of two (validate_matmul_nbits refuses others): the kernel finds its block by a shift
  if (!(p.m <= kMmaRows && p.block >= 32 && aligned(p.b, 16) && (!kTwoWeights || aligned(l.p2.b, 16)))) return false;
  // Gated, blocks under a step: measured slower than the two GEMVs and SILU_MUL it replaces (an H200 at
  // 14336 x 4096, blocks of 32: 37.3 us against 2 x 17.3 + 1.3); the paired form runs those two GEMVs in one
  // launch. Blocks of 128 or more take the gated form.
  if (kGated && p.block < 128) return false;
  if (kPaired && p.block >= 128) return false;
  if (p.block < 128) {  // the one-row path only, over whole steps of B, with a word of scales a lane
    const bool one_row = p.m == 1 && aligned(l.a, 16) && p.k % 8 == 0 && p.col_bytes % 64 == 0 &&
                         aligned(l.scales, 4) && (!kPaired || aligned(l.scales2, 4));
    if (!one_row || mma_shared_a_bytes(p.col_bytes / 64, blocks_a_step(p)) > kMmaSharedA) return false;
  }
  constexpr int64_t kOwned = kGated ? kMmaColumns / 2 : kMmaColumns;
  const int64_t blocks = (p.n + kOwned - 1) / kOwned * (kPaired ? 2 : 1);
  const int64_t wide_blocks = static_cast<int64_t>(multiprocessors) * (kMmaWarpsPerSm / kMmaWideWarps);
  return blocks <= wide_blocks ? launch_warps<kMmaWideWarps, kGated, kPaired>(l, blocks, stream)
                               : launch_warps<kMmaWarps, kGated, kPaired>(l, blocks, stream);
}

}  // namespace

bool launch_gemv_mma(const NbitsArgs& p, const __half* a, const __half* scales, const __half* bias, __half* y,
                     int multiprocessors, hipStream_t stream) {
  return launch_mma<false, false>(MmaLaunch{p, a, scales, bias, y, p, scales, nullptr}, multiprocessors, stream);
}

bool launch_gemv_mma_silu_mul(const NbitsArgs& gate, const __half* gate_scales, const NbitsArgs& up,
                              const __half* up_scales, const __half* a, __half* y, int multiprocessors,
                              hipStream_t stream) {
  return launch_mma<true, false>(MmaLaunch{gate, a, gate_scales, nullptr, y, up, up_scales, nullptr}, multiprocessors,
                                 stream);
}

bool launch_gemv_mma_paired(const NbitsArgs& gate, const __half* gate_scales, const NbitsArgs& up,
                            const __half* up_scales, const __half* a, __half* y_gate, __half* y_up,
                            int multiprocessors, hipStream_t stream) {
  return launch_mma<false, true>(MmaLaunch{gate, a, gate_scales, nullptr, y_gate, up, up_scales, y_up},
                                 multiprocessors, stream);
}

}  // namespace hipdnn_ep::kernels::gpu
#endif  // HIPDNN_EP_PLATFORM_CUDA
