// The int4 MatMulNBits decode GEMV on tensor cores (CUDA only); see matmul_nbits.hip for where it runs.
#include <atomic>
#include <cstdint>

#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/matmul_nbits.h"

#if defined(HIPDNN_EP_PLATFORM_CUDA)
namespace hipdnn_ep::kernels::gpu {
namespace {

// The decode GEMV on tensor cores (CUDA, float16, 1..kMmaRows rows of A, blocks of a multiple of 128
// elements, B 16-byte aligned). A block owns kMmaColumns output columns; its kMmaWarps warps split K in
// steps of 128 elements (one quantization block or part of one) and each warp loads a step's B, scales
// and zero points just before using them (its first step before A is staged). Loading the next step
// before the current one's arithmetic (two steps in registers, at the 64-register bound) measured 5-11%
// slower on an H200 for every Llama-3.1-8B shape. In a step, lane (g, t) = (lane / 4,
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

}  // namespace

bool launch_gemv_mma(const NbitsArgs& p, const __half* a, const __half* scales, const __half* bias, __half* y,
                     hipStream_t stream) {
  if (!(p.m <= kMmaRows && p.block % 128 == 0 && aligned(p.b, 16) && mma_device())) return false;
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
  return true;
}

}  // namespace hipdnn_ep::kernels::gpu
#endif  // HIPDNN_EP_PLATFORM_CUDA
