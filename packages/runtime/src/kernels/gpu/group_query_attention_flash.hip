// GroupQueryAttention's prefill on tensor cores (CUDA only; see group_query_attention.hip for the op).
#include <cstdint>

#include "gpu/gpu_device.h"
#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/group_query_attention.h"
#include "kernels/gpu/mma_sm80.h"
#include "kernels/gpu/rotary.h"

#if defined(HIPDNN_EP_PLATFORM_CUDA)
namespace hipdnn_ep::kernels::gpu {
namespace {

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
  copy_async_wait_all();

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

template <int D>
bool launch_flash_for(const GqaParams& g, const __half* query, const __half* cos, const __half* sin,
                      const int32_t* seqlens, const int32_t* total, const __half* present_k, const __half* present_v,
                      __half* out, hipStream_t stream) {
  if (!runs_sm80_code<gqa_flash_kernel<D>>()) return false;
  const int64_t group = g.heads / g.kv_heads;
  const dim3 grid(static_cast<unsigned>((g.seq * group + kFlashRows - 1) / kFlashRows),
                  static_cast<unsigned>(g.kv_heads), static_cast<unsigned>(g.batch));
  gqa_flash_kernel<D><<<grid, kFlashWarps * 32, 0, stream>>>(g, query, cos, sin, seqlens, total, present_k, present_v,
                                                             out);
  check_launch("group_query_attention (tensor cores)");
  return true;
}

}  // namespace

bool launch_gqa_flash(const GqaParams& g, const __half* query, const __half* cos, const __half* sin,
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

}  // namespace hipdnn_ep::kernels::gpu
#endif  // HIPDNN_EP_PLATFORM_CUDA
