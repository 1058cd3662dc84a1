// The int4 MatMulNBits prefill GEMM on tensor cores (CUDA only); see matmul_nbits.hip for where it runs.
//
// Y = A x W^T (+ bias) for a prompt's rows, without a dequantized copy of W in memory: a block computes a
// tile of kTileM rows x kTileN columns of Y in steps of kTileK elements of K. Each step's A (cp.async, 16
// bytes a copy) and packed B land in shared memory kStages - 1 steps ahead of their use. One step ahead of
// the arithmetic, the block turns the step's B into halves in shared memory, each thread 32 of one column:
// a byte permute and one logic op make the halves 1024 + q (low nibble) and 64 + q (high nibble), exact; a
// subtraction and a multiplication in half give round((q - z) * s), the float16 weight the dequantize +
// GEMM path uses. A warp owns 64 x 32 of the tile and sums with mma.m16n8k16 in float, its fragments
// from ldmatrix (rows of A and of halved B keep 16-byte chunk c of row r at chunk c ^ (r % 8): distinct
// banks). A column's scale and zero point are loaded with the step's copies and turned into constants only
// after the step's arithmetic, so that their latency does not stall the warp.
//
// An H100, us a call, dequantize + cuBLASLt GEMM -> this kernel, 128 rows: gate/up 14336 x 4096 94.0 -> 72.1
// (block 128 with zero points) and 95.2 -> 73.9 (block 32), gate + up + SiLU (matmul_nbits_silu_mul, block 32)
// 201.1 -> 160.4. It reaches about 205 TFLOP/s where cuBLASLt's GEMM reaches 650 (an issue-bound mma.sync
// loop: its tensor pipe was a third busy, about 6 instructions issued per mma; a 64-bit division per step
// had cost another 13%). So it pays where the dequantized copy's traffic outweighs that, with enough tiles
// to fill the device (gemm_nbits_applies). Measured before the division went, with K split over more
// blocks and a second kernel adding the parts: qkv 6144 x 4096 43.5 -> 60.6 and o_proj 4096 x 4096 26.2 ->
// 42.3 (78.7 unsplit) lost, down 4096 x 14336 gained only with the split (101.6 -> 93.2), 512 rows lost
// (141 -> 342); those keep the dequantize + GEMM path. Tried without gain: 6 stages, 2 blocks an SM with
// 3, blocks starting their K at different steps. Each warp dequantizing its own B fragments in registers
// (no shared halves; retried without the division, 4 stages, B rows swizzled against bank conflicts)
// measured gate/up 71.2 us (blocks of 128), 79.0 (of 32) and gate + up + SiLU 170.2, against this layout's
// 71.4, 73.5 and 159.5 in the same run: no gain. A non-volatile mma wrapper changed nothing either.
#include <cstdint>

#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/matmul_nbits.h"
#include "kernels/gpu/mma_sm80.h"

#if defined(HIPDNN_EP_PLATFORM_CUDA)
namespace hipdnn_ep::kernels::gpu {
namespace {

constexpr int kTileM = 128;
constexpr int kTileN = 128;
constexpr int kTileK = 64;
constexpr int kThreads = 256;  // 8 warps: 2 along M x 4 along N, each 64 x 32 of the tile
constexpr int kWarpM = 64;
constexpr int kWarpN = 32;
constexpr int kStages = 4;
constexpr int kMaxRows = 128;  // one tile of rows: more rows repeat the block's work and lose to cuBLASLt

// Shared memory: kStages stages of A [kTileM][kTileK] halves and packed B [kTileN][kTileK / 2] bytes, then
// two buffers of B dequantized, [kTileN][kTileK] halves, then per thread and stage the constants of the
// block its B bytes lie in. A and dequantized B rows keep 16-byte chunk c of row r at chunk c ^ (r % 8).
constexpr int kStageA = kTileM * kTileK * 2;
constexpr int kStageB = kTileN * kTileK / 2;
constexpr int kStageBytes = kStageA + kStageB;
constexpr int kHalfB = kTileN * kTileK * 2;
constexpr int kConstants = kThreads * 8;
constexpr int kSharedBytes = kStages * kStageBytes + 2 * kHalfB + kStages * kConstants;


struct GemmArgs {
  NbitsArgs p;
  const __half* a;
  const __half* scales;
  const __half* bias;  // may be null
  __half* y;
};

// What the constants of a column's block are made of, as loaded: the scale's bits and the zero point's byte
// (the nibble `odd` of it).
struct RawConstants {
  uint16_t scale;
  uint8_t zp_byte;
  bool odd;
};

// The half pairs (1024 + z, 64 + z) and (s, s). Called well after the loads (after a step's arithmetic), so
// that their latency hides behind that arithmetic instead of stalling the warp.
__device__ __forceinline__ uint2 make_constants(RawConstants raw) {
  const int z = raw.odd ? raw.zp_byte >> 4 : raw.zp_byte & 0xF;
  const __half s = __ushort_as_half(raw.scale);
  return make_uint2(half2_bits(__halves2half2(__int2half_rn(1024 + z), __int2half_rn(64 + z))),
                    half2_bits(__halves2half2(s, s)));
}

// Elements 2j and 2j + 1 of a word's 8 nibbles (byte j of y = the word's bytes j, j + 1, j, j + 1 shifted by
// 8 (j % 2)) as the half pair round((q - z) * s): the halves 1024 + q (low nibble) and 64 + q (high nibble,
// where 0x5400 has an ulp of 1/16) minus the constants' (1024 + z, 64 + z), exact, times (s, s).
__device__ __forceinline__ uint32_t dequantized_pair(uint32_t y, uint2 constants) {
  const uint32_t biased = and_or<0x00F0000Fu, 0x54006400u>(y);
  return half2_bits(__hmul2(__hsub2(bits_half2(biased), bits_half2(constants.x)), bits_half2(constants.y)));
}

constexpr int kAChunks = kTileM * kTileK / 8 / kThreads;  // 16-byte copies of A a thread, a step
static_assert(kTileN * kTileK / 2 / 16 == kThreads, "one 16-byte copy of B a thread");

// What this thread copies and loads, fixed over K (a step adds its offset): chunk c = tid % 8 of rows
// tid / 8 + 32 i of A's tile, 16 bytes of column tid / 2 of B at elements 32 (tid % 2) on, and that
// column's scales and zero points; rows past M and columns past N are zero-filled.
struct Sources {
  const __half* a;       // chunk 0's row at K 0
  int64_t a_rows;        // elements from one of this thread's rows of A to the next (32 rows)
  unsigned a_valid;      // bit i: row i lies within M
  const uint8_t* b;      // at K 0
  bool b_valid;
  const unsigned short* scales;  // the column's
  const uint8_t* zp;             // the column's; null: zero point 8
  int block_shift;       // log2 of the block size
};

__device__ __forceinline__ Sources thread_sources(const GemmArgs& g, int64_t row0, int64_t col0) {
  const NbitsArgs& p = g.p;
  const int tid = threadIdx.x;
  Sources s{};
  const int64_t row = row0 + tid / 8;
  s.a = g.a + row * p.k + (tid % 8) * 8;
  s.a_rows = 32 * p.k;
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) s.a_valid |= (row + 32 * i < p.m ? 1u : 0u) << i;
  const int64_t column = col0 + tid / 2;
  s.b_valid = column < p.n;
  const int64_t safe = s.b_valid ? column : 0;
  s.b = p.b + safe * p.col_bytes + (tid % 2) * 16;
  s.scales = reinterpret_cast<const unsigned short*>(g.scales) + safe * p.blocks;
  s.zp = p.zp != nullptr ? p.zp + safe * p.zp_stride : nullptr;
  s.block_shift = __ffsll(p.block) - 1;
  return s;
}

// Copies step `step`'s A and packed B into stage buffer `stage` (cp.async).
__device__ __forceinline__ void load_step(const Sources& s, uint8_t* stage, int step) {
  const int tid = threadIdx.x;
  // row tid / 8 + 32 i keeps chunk c at c ^ (row % 8), and row % 8 is (tid / 8) % 8 for every i
  const uint32_t a_dst = shared_address(stage) + ((tid / 8) * (kTileK / 8) + ((tid % 8) ^ ((tid / 8) % 8))) * 16;
  const int64_t k0 = static_cast<int64_t>(step) * kTileK;
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) {
    const bool valid = (s.a_valid >> i) & 1u;
    copy16_async(a_dst + i * 32 * kTileK * 2, valid ? s.a + i * s.a_rows + k0 : s.a - (tid % 8) * 8, valid);
  }
  copy16_async(shared_address(stage + kStageA + tid * 16), s.b_valid ? s.b + k0 / 2 : s.b, s.b_valid);
}

// The constants of this thread's B bytes in step `step` (scale 0 past N: those columns come out 0).
__device__ __forceinline__ RawConstants load_constants(const Sources& s, int step) {
  if (!s.b_valid) return {0, 0x88, false};
  const int block_index = (step * kTileK + 32 * (static_cast<int>(threadIdx.x) % 2)) >> s.block_shift;
  return {__ldg(s.scales + block_index), s.zp != nullptr ? __ldg(s.zp + block_index / 2) : uint8_t{0x88},
          block_index % 2 == 1};
}

// Thread tid's 16 bytes of a stage's packed B (column tid / 2, elements 32 (tid % 2) on) as 32 halves into
// the dequantized buffer `out`.
__device__ __forceinline__ void dequantize_step(const uint8_t* stage, uint2 constants, uint8_t* out) {
  const int tid = threadIdx.x, n = tid / 2, c = tid % 2;
  const uint4 packed = *reinterpret_cast<const uint4*>(stage + kStageA + tid * 16);
  const uint32_t words[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t low = __byte_perm(words[j], 0, 0x1010), high = __byte_perm(words[j], 0, 0x3232);
    const uint4 halves = make_uint4(dequantized_pair(low, constants), dequantized_pair(low >> 8, constants),
                                    dequantized_pair(high, constants), dequantized_pair(high >> 8, constants));
    *reinterpret_cast<uint4*>(out + (n * (kTileK / 8) + ((4 * c + j) ^ (n % 8))) * 16) = halves;
  }
}

__global__ void __launch_bounds__(kThreads, 1) gemm_nbits_kernel(GemmArgs g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) uint8_t shared[];
  uint8_t* const half_b = shared + kStages * kStageBytes;
  uint2* const constants_slots = reinterpret_cast<uint2*>(half_b + 2 * kHalfB);
  const NbitsArgs& p = g.p;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_row = (warp / (kTileN / kWarpN)) * kWarpM, warp_col = (warp % (kTileN / kWarpN)) * kWarpN;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTileM, col0 = static_cast<int64_t>(blockIdx.x) * kTileN;
  const int steps = static_cast<int>(p.k / kTileK);
  const Sources sources = thread_sources(g, row0, col0);

  wait_for_predecessor();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) {
      load_step(sources, shared + s * kStageBytes, s);
      constants_slots[s * kThreads + tid] = make_constants(load_constants(sources, s));
    }
    copy_async_commit();
  }
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 2));
  __syncthreads();
  dequantize_step(shared, constants_slots[tid], half_b);

  float acc[kWarpM / 16][kWarpN / 8][4] = {};
  for (int i = 0; i < steps; ++i) {
    // step i + 1 has landed and step i's B is dequantized; every warp is done with step i - 1
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 3));
    __syncthreads();
    const int ahead = i + kStages - 1;
    RawConstants ahead_constants{};
    if (ahead < steps) {
      load_step(sources, shared + (ahead % kStages) * kStageBytes, ahead);
      ahead_constants = load_constants(sources, ahead);
    }
    copy_async_commit();
    if (i + 1 < steps) {
      dequantize_step(shared + ((i + 1) % kStages) * kStageBytes, constants_slots[((i + 1) % kStages) * kThreads + tid],
                      half_b + ((i + 1) % 2) * kHalfB);
    }
    const uint8_t* stage_a = shared + (i % kStages) * kStageBytes;
    const uint8_t* stage_b = half_b + (i % 2) * kHalfB;
#pragma unroll
    for (int kk = 0; kk < kTileK / 16; ++kk) {
      uint32_t af[kWarpM / 16][4], bf[kWarpN / 16][4];
#pragma unroll
      for (int mi = 0; mi < kWarpM / 16; ++mi) {
        const int r = warp_row + mi * 16 + lane % 16, c = kk * 2 + lane / 16;
        ldmatrix_x4(af[mi], shared_address(stage_a + (r * (kTileK / 8) + (c ^ (r % 8))) * 16));
      }
#pragma unroll
      for (int nj = 0; nj < kWarpN / 16; ++nj) {
        // matrices (columns 0-7, k 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15): b0, b1 of two tiles of 8
        const int n = warp_col + nj * 16 + lane % 8 + (lane / 16) * 8, c = kk * 2 + (lane / 8) % 2;
        ldmatrix_x4(bf[nj], shared_address(stage_b + (n * (kTileK / 8) + (c ^ (n % 8))) * 16));
      }
#pragma unroll
      for (int mi = 0; mi < kWarpM / 16; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kWarpN / 8; ++ni) {
          mma_16816(acc[mi][ni], af[mi], bf[ni / 2][(ni % 2) * 2], bf[ni / 2][(ni % 2) * 2 + 1]);
        }
      }
    }
    if (ahead < steps) constants_slots[(ahead % kStages) * kThreads + tid] = make_constants(ahead_constants);
  }
  copy_async_wait_all();
  allow_dependents();

  // lane (group, pair) holds rows group and group + 8 of each 16, columns 2 pair and 2 pair + 1 of each 8
  const int group = lane / 4, pair = lane % 4;
#pragma unroll
  for (int mi = 0; mi < kWarpM / 16; ++mi) {
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row) {
      const int64_t row = row0 + warp_row + mi * 16 + group + 8 * half_row;
      if (row >= p.m) continue;
#pragma unroll
      for (int ni = 0; ni < kWarpN / 8; ++ni) {
        const int64_t col = col0 + warp_col + ni * 8 + 2 * pair;
        float v0 = acc[mi][ni][2 * half_row], v1 = acc[mi][ni][2 * half_row + 1];
        if (g.bias != nullptr) {
          if (col < p.n) v0 += __half2float(g.bias[col]);
          if (col + 1 < p.n) v1 += __half2float(g.bias[col + 1]);
        }
        __half* out = g.y + row * p.n + col;
        if (col + 1 < p.n && p.n % 2 == 0) {
          *reinterpret_cast<__half2*>(out) = __floats2half2_rn(v0, v1);
        } else {
          if (col < p.n) out[0] = __float2half_rn(v0);
          if (col + 1 < p.n) out[1] = __float2half_rn(v1);
        }
      }
    }
  }
#else
  __trap();  // the host launches this kernel only on devices of compute capability 8.0 or more
#endif
}

}  // namespace

bool gemm_nbits_applies(const NbitsArgs& p, const __half* a, int multiprocessors) {
  // at least a tile for every other SM: fewer tiles leave the device idle (qkv and o_proj above)
  const int64_t tiles = (p.n + kTileN - 1) / kTileN;
  return p.m <= kMaxRows && 2 * tiles >= multiprocessors && p.k % kTileK == 0 && p.block >= 32 && aligned(a, 16) &&
         aligned(p.b, 16) && p.col_bytes % 16 == 0;
}

bool launch_gemm_nbits(const NbitsArgs& p, const __half* a, const __half* scales, const __half* bias, __half* y,
                       hipStream_t stream) {
  if (!runs_sm80_code<gemm_nbits_kernel>() || !allows_shared_bytes<gemm_nbits_kernel, kSharedBytes>()) return false;
  const dim3 grid(static_cast<unsigned>((p.n + kTileN - 1) / kTileN), static_cast<unsigned>((p.m + kTileM - 1) / kTileM));
  launch_overlapped<gemm_nbits_kernel>(grid, kThreads, kSharedBytes, stream, GemmArgs{p, a, scales, bias, y});
  return true;
}

}  // namespace hipdnn_ep::kernels::gpu
#endif  // HIPDNN_EP_PLATFORM_CUDA
