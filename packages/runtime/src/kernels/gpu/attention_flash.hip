// hipdnn_ep_kernel_attention in float16 on tensor cores (CUDA only; attention.hip has the op and the
// scalar kernel every other call takes).
//
// A block of warps per (tile of query rows, query head, batch row). Each warp computes 16 query rows
// against a range of keys: the queries are kept in registers as MMA fragments; keys and values come
// in tiles through shared memory (cp.async, the next tile's keys loading while the current values are
// used, and the reverse). S = Q K^T and O += P V are m16n8k16 MMAs with float accumulators; the online
// softmax runs on the S fragments in registers: the scale, the softcap, the mask's bias, then base-2
// exponentials of (score - running max) * log2(e) (the difference first, so a float mask of -FLT_MAX
// gives the same weights as the scalar kernel), P rounded to half for the second product. The mask's
// elements for a tile are loaded together (head size 64: before its scores are computed). Causal
// blocks stop at their last row's key and mask the diagonal's tiles per element; blocks start from
// the last query tile, which has the most keys.
//
// The block's shape is chosen per call. Where the call has enough rows, 4 or 2 warps of distinct rows
// share tiles of 64 keys. Where it has few (an encoder at batch 1: 96 groups of 16 rows for 132
// multiprocessors), one group of 16 rows per block and its warps split the keys (tiles of 32 of their
// own), their partial softmax states merged through shared memory at the end: a single warp per
// multiprocessor spends most cycles waiting on its own instructions' latency.
#include <cmath>
#include <cstdint>

#include "gpu/gpu_device.h"
#include "kernels/gpu/attention.h"
#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/mma_sm80.h"

#if defined(HIPDNN_EP_PLATFORM_CUDA)
namespace hipdnn_ep::kernels::gpu {
namespace {

constexpr int kKeys = 64;       // keys per tile, warps of distinct rows sharing it
constexpr int kSplitKeys = 32;  // keys per tile of a warp's own, where the warps of a block split the keys
constexpr int kPad = 8;    // halfs after each shared row: ldmatrix rows fall in distinct banks
constexpr int64_t kMaxSeq = int64_t{1} << 30;  // key and query counts (int arithmetic in the kernel)

__device__ __forceinline__ float bias_of(uint8_t attends) { return attends != 0 ? 0.0f : -INFINITY; }
__device__ __forceinline__ float bias_of(__half value) { return __half2float(value); }
__device__ __forceinline__ float bias_of(float value) { return value; }

// x[n][e] += the mask's bias (as mask_bias gives it) at each score element of columns [N0, N1) of a key tile:
// the loads all issued before any is used (a branch per element on the mask's dtype would wait out each load's
// latency in turn). Keys past the last one read the last key's element (in bounds; the caller masks them).
template <typename M, int N0, int N1, int NT>
__device__ __forceinline__ void add_bias(const void* mask, const int64_t (&row)[2], int64_t key_stride, int t0,
                                         int key_last, int lane, float (&x)[NT][4]) {
  const M* m = static_cast<const M*>(mask);
  M raw[N1 - N0][4];
#pragma unroll
  for (int n = N0; n < N1; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key_at = static_cast<int>(imin(t0 + n * 8 + (lane % 4) * 2 + (e % 2), key_last));
      raw[n - N0][e] = m[row[e / 2] + key_at * key_stride];
    }
  }
#pragma unroll
  for (int n = N0; n < N1; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) x[n][e] += bias_of(raw[n - N0][e]);
  }
}

template <int N0, int N1, int NT>
__device__ __forceinline__ void add_tile_bias(const AttentionLayout& l, const void* mask, const int64_t (&row)[2],
                                              int t0, int lane, float (&x)[NT][4]) {
  const int key_last = static_cast<int>(l.kv_seq) - 1;
  switch (l.mask_dtype) {
    case HIPDNN_EP_DTYPE_BOOL: return add_bias<uint8_t, N0, N1, NT>(mask, row, l.mask[3], t0, key_last, lane, x);
    case HIPDNN_EP_DTYPE_FLOAT16: return add_bias<__half, N0, N1, NT>(mask, row, l.mask[3], t0, key_last, lane, x);
    default: return add_bias<float, N0, N1, NT>(mask, row, l.mask[3], t0, key_last, lane, x);
  }
}

// RG warps of 16 distinct query rows each (sharing key tiles of kKeys), or, KS > 1, KS warps of the same 16
// rows each taking every KS-th tile of kSplitKeys keys (in a tile of its own: no block barrier in the loop),
// their partial softmax states merged through shared memory at the end: more warps at work where the call
// has few query rows (an encoder at batch 1: 96 warps of 16 rows for 132 multiprocessors otherwise).
template <int D, int RG, int KS>
__global__ void __launch_bounds__(RG * KS * 32) attention_flash_kernel(AttentionLayout l, const __half* query,
                                                                       const __half* key, const __half* value,
                                                                       const void* mask, __half* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  static_assert(RG == 1 || KS == 1, "warps split the rows or the keys, not both");
  constexpr bool kSplit = KS > 1;
  constexpr int kThreads = RG * KS * 32;
  constexpr int kTile = kSplit ? kSplitKeys : kKeys;  // keys per tile
  constexpr int kRows = 16 * RG;
  constexpr int kPitch = D + kPad;
  constexpr int kChunks = D / 8;  // 16-byte pieces of a row
  constexpr bool kEarlyBias = D <= 64;  // registers for the bias during S = Q K^T (head size 128 would spill)
  constexpr int kTileHalfs = kTile * kPitch;
  static_assert(kTile >= kRows, "the query tile is staged in the first key tile");
  // key tiles (one, or one per warp when split), then value tiles; the split's merge reuses them as floats
  __shared__ __align__(16) __half tiles[2 * KS * kTileHalfs];
  static_assert(!kSplit || KS * (16 * D + 32) * sizeof(float) <= sizeof(tiles), "the merge's scratch fits");
  const int64_t b = blockIdx.z, h = blockIdx.y, kvh = h / (l.q_heads / l.kv_heads);
  const int q_seq = static_cast<int>(l.q_seq), kv_seq = static_cast<int>(l.kv_seq);
  const int row_begin = static_cast<int>(gridDim.x - 1 - blockIdx.x) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row_warp = kSplit ? 0 : warp;  // the warp's 16 rows within the block's
  const int split = kSplit ? warp : 0;     // the warp's share of the keys: tiles split, split + KS, ...
  __half* k_tile = tiles + split * kTileHalfs;
  __half* v_tile = tiles + (KS + split) * kTileHalfs;
  // Key and value tiles are shared by the block's warps, or each warp's own when split.
  auto tile_sync = [] {
    if constexpr (kSplit) {
      __syncwarp();
    } else {
      __syncthreads();
    }
  };

  // The block's queries, staged in the first key tile, then as fragments in registers.
  const __half* q_head = query + b * l.q.batch + h * l.q.head;
  for (int t = threadIdx.x; t < kRows * kChunks; t += kThreads) {
    const int r = t / kChunks, c0 = (t % kChunks) * 8;
    const bool valid = row_begin + r < q_seq;
    copy16_async(shared_address(&tiles[r * kPitch + c0]), q_head + (valid ? (row_begin + r) * l.q.seq + c0 : 0),
                 valid);
  }
  copy_async_commit();
  copy_async_wait_all();
  __syncthreads();
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int r = row_warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
    ldmatrix_x4(qf[kk], shared_address(&tiles[r * kPitch + kk * 16 + (lane / 16) * 8]));
  }
  __syncthreads();  // the tiles now hold keys

  // Keys [0, hi) of this thread's two rows (lane / 4 and lane / 4 + 8 of the warp's 16; none past the last
  // row), of the warp and the block; keys below full_hi are seen by every row of the warp.
  auto hi_of = [&](int row) { return l.causal ? static_cast<int>(imin(row + 1, kv_seq)) : kv_seq; };
  int row_hi[2];
  int64_t mask_row[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int row = row_begin + row_warp * 16 + lane / 4 + 8 * k;
    row_hi[k] = row < q_seq ? hi_of(row) : 0;
    mask_row[k] = b * l.mask[0] + h * l.mask[1] + (row < q_seq ? row : 0) * l.mask[2];
  }
  const int warp_first = row_begin + row_warp * 16, warp_last = static_cast<int>(imin(warp_first + 16, q_seq)) - 1;
  const bool warp_rows = warp_first < q_seq;
  const int warp_hi = warp_rows ? hi_of(warp_last) : 0;
  const int full_hi = warp_rows ? hi_of(warp_first) : 0;
  const int block_hi = hi_of(static_cast<int>(imin(row_begin + kRows, q_seq)) - 1);

  const __half* k_head = key + b * l.k.batch + kvh * l.k.head;
  const __half* v_head = value + b * l.v.batch + kvh * l.v.head;
  auto load_tile = [&](__half* tile, const __half* src, int64_t seq_stride, int t0) {
    if (t0 < block_hi) {
      for (int c = kSplit ? lane : threadIdx.x; c < kTile * kChunks; c += kSplit ? 32 : kThreads) {
        const int r = c / kChunks, col = (c % kChunks) * 8;
        const bool valid = t0 + r < block_hi;
        copy16_async(shared_address(&tile[r * kPitch + col]), src + (valid ? (t0 + r) * seq_stride + col : 0), valid);
      }
    }
    copy_async_commit();  // possibly empty: one group per tile and operand keeps the waits uniform
  };

  const float log2e = 1.4426950408889634f;
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, sums[2] = {0.0f, 0.0f};

  constexpr int kStep = KS * kTile;  // keys from one of the warp's tiles to its next
  load_tile(k_tile, k_head, l.k.seq, split * kTile);
  load_tile(v_tile, v_head, l.v.seq, split * kTile);
  for (int t0 = split * kTile; t0 < block_hi; t0 += kStep) {
    const bool active = t0 < warp_hi;
    float bias[kTile / 8][4];  // head size 64: the mask's bias, loading while the keys arrive and S is computed
    if (kEarlyBias && active && l.has_mask) {
#pragma unroll
      for (int n = 0; n < kTile / 8; ++n) bias[n][0] = bias[n][1] = bias[n][2] = bias[n][3] = 0.0f;
      add_tile_bias<0, kTile / 8>(l, mask, mask_row, t0, lane, bias);
    }
    copy_async_wait_one();  // this tile's keys are in (its values may still be loading)
    tile_sync();
    float s[kTile / 8][4];
    if (active) {
#pragma unroll
      for (int n = 0; n < kTile / 8; ++n) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk += 2) {
          uint32_t kb[4];
          ldmatrix_x4(kb, shared_address(&k_tile[(n * 8 + lane % 8) * kPitch + kk * 16 + (lane / 8) * 8]));
          mma_16816(s[n], qf[kk], kb[0], kb[1]);
          mma_16816(s[n], qf[kk + 1], kb[2], kb[3]);
        }
      }
      // Scores: scaled, softcapped, the mask's bias added (head size 128: loaded now, half a tile at a time),
      // masked to each row's keys.
#pragma unroll
      for (int n = 0; n < kTile / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[n][e] * l.scale;
          if (l.softcap > 0.0f) x = l.softcap * tanhf(x / l.softcap);
          s[n][e] = kEarlyBias && l.has_mask ? x + bias[n][e] : x;
        }
      }
      if (!kEarlyBias && l.has_mask) {
        add_tile_bias<0, kTile / 16>(l, mask, mask_row, t0, lane, s);
        add_tile_bias<kTile / 16, kTile / 8>(l, mask, mask_row, t0, lane, s);
      }
      if (t0 + kTile > full_hi) {  // some element of the tile is past some row's keys
#pragma unroll
        for (int n = 0; n < kTile / 8; ++n) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if (t0 + n * 8 + (lane % 4) * 2 + (e % 2) >= row_hi[e / 2]) s[n][e] = -INFINITY;
          }
        }
      }
      // Online softmax per row: the quad of lanes sharing a row reduces its max over shuffles.
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        float mx = m[k];
#pragma unroll
        for (int n = 0; n < kTile / 8; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * k], s[n][2 * k + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float base = mx == -INFINITY ? 0.0f : mx;  // a row with no key yet
        const float alpha = exp2f((m[k] - base) * log2e);
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < kTile / 8; ++n) {
          s[n][2 * k] = exp2f((s[n][2 * k] - base) * log2e);
          s[n][2 * k + 1] = exp2f((s[n][2 * k + 1] - base) * log2e);
          sum += s[n][2 * k] + s[n][2 * k + 1];
        }
        sums[k] = sums[k] * alpha + sum;  // this lane's part of the row's sum; the quad is summed at the end
        m[k] = mx;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o[n][2 * k] *= alpha;
          o[n][2 * k + 1] *= alpha;
        }
      }
    }
    tile_sync();  // every warp is done with k_tile
    load_tile(k_tile, k_head, l.k.seq, t0 + kStep);
    copy_async_wait_one();  // this tile's values are in
    tile_sync();
    if (active) {
#pragma unroll
      for (int kk = 0; kk < kTile / 16; ++kk) {
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
    tile_sync();  // every warp is done with v_tile
    load_tile(v_tile, v_head, l.v.seq, t0 + kStep);
  }
  copy_async_wait_all();
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    sums[k] += __shfl_xor_sync(0xffffffffu, sums[k], 1);
    sums[k] += __shfl_xor_sync(0xffffffffu, sums[k], 2);
  }

  if constexpr (kSplit) {
    // Each warp's state (its rows' max and sum, its unnormalized outputs) to shared memory; warp 0 rescales
    // every state to the overall max and sums them.
    float* scratch = reinterpret_cast<float*>(tiles);  // [KS][16][D] outputs, then [KS][16] max, [KS][16] sum
    float* maxes = scratch + KS * 16 * D;
    float* totals = maxes + KS * 16;
    __syncthreads();  // every warp is done with the tiles
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int r = lane / 4 + 8 * k;
      if (lane % 4 == 0) {
        maxes[warp * 16 + r] = m[k];
        totals[warp * 16 + r] = sums[k];
      }
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        *reinterpret_cast<float2*>(&scratch[(warp * 16 + r) * D + n * 8 + (lane % 4) * 2]) =
            make_float2(o[n][2 * k], o[n][2 * k + 1]);
      }
    }
    __syncthreads();
    if (warp != 0) return;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int r = lane / 4 + 8 * k;
      float top = -INFINITY;
#pragma unroll
      for (int w = 0; w < KS; ++w) top = fmaxf(top, maxes[w * 16 + r]);
      const float base = top == -INFINITY ? 0.0f : top;
      float weight[KS];
      sums[k] = 0.0f;
#pragma unroll
      for (int w = 0; w < KS; ++w) {
        weight[w] = exp2f((maxes[w * 16 + r] - base) * log2e);  // 0 for a warp that saw no key
        sums[k] += weight[w] * totals[w * 16 + r];
      }
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        float2 acc = make_float2(0.0f, 0.0f);
#pragma unroll
        for (int w = 0; w < KS; ++w) {
          const float2 part = *reinterpret_cast<const float2*>(&scratch[(w * 16 + r) * D + n * 8 + (lane % 4) * 2]);
          acc.x += weight[w] * part.x;
          acc.y += weight[w] * part.y;
        }
        o[n][2 * k] = acc.x;
        o[n][2 * k + 1] = acc.y;
      }
    }
  }

#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const float sum = sums[k];
    const int row = row_begin + row_warp * 16 + lane / 4 + 8 * k;
    if (row >= q_seq) continue;
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // every key masked: zeros, as the scalar kernel gives
    __half* o_row = out + b * l.y.batch + h * l.y.head + row * l.y.seq;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      *reinterpret_cast<__half2*>(o_row + n * 8 + (lane % 4) * 2) =
          __floats2half2_rn(o[n][2 * k] * inv, o[n][2 * k + 1] * inv);
    }
  }
#endif
}

template <int D, int RG, int KS>
bool launch_for(const AttentionLayout& l, const __half* query, const __half* key, const __half* value,
                const void* mask, __half* out, hipStream_t stream) {
  if (!runs_sm80_code<attention_flash_kernel<D, RG, KS>>()) return false;
  const dim3 grid(static_cast<unsigned>((l.q_seq + 16 * RG - 1) / (16 * RG)), static_cast<unsigned>(l.q_heads),
                  static_cast<unsigned>(l.batch));
  attention_flash_kernel<D, RG, KS><<<grid, RG * KS * 32, 0, stream>>>(l, query, key, value, mask, out);
  check_launch("attention (tensor cores)");
  return true;
}

// The block shape by how many blocks the call has: 4 or 2 warps of distinct rows where that still gives
// every multiprocessor a block, else one group of 16 rows per block with the keys split over its warps.
template <int D>
bool launch_for_size(hipdnn_ep_state_t* state, const AttentionLayout& l, const __half* query, const __half* key,
                     const __half* value, const void* mask, __half* out, hipStream_t stream) {
  const int sms = gpu_device(state).multiprocessors();
  const int64_t heads = l.batch * l.q_heads;
  if (heads * ((l.q_seq + 63) / 64) >= sms) return launch_for<D, 4, 1>(l, query, key, value, mask, out, stream);
  if (heads * ((l.q_seq + 31) / 32) >= sms) return launch_for<D, 2, 1>(l, query, key, value, mask, out, stream);
  constexpr int kSplits = D <= 64 ? 4 : 2;  // (a head size of 128 has room for two warps' tiles)
  return launch_for<D, 1, kSplits>(l, query, key, value, mask, out, stream);
}

// Every row of a [batch, heads, seq, size] view starts 16-byte aligned.
bool rows_aligned(const void* base, const HeadStrides& s) {
  return aligned(base, 16) && s.batch % 8 == 0 && s.head % 8 == 0 && s.seq % 8 == 0;
}

}  // namespace

bool launch_attention_flash(hipdnn_ep_state_t* state, const AttentionLayout& l, const __half* query,
                            const __half* key, const __half* value, const void* mask, __half* out,
                            hipStream_t stream) {
  if (l.head_size != l.v_head_size || !rows_aligned(query, l.q) || !rows_aligned(key, l.k) ||
      !rows_aligned(value, l.v) || !aligned(out, 4) || l.y.batch % 2 != 0 || l.y.head % 2 != 0 || l.y.seq % 2 != 0 ||
      l.q_seq > kMaxSeq || l.kv_seq > kMaxSeq || l.q_heads > 65535 || l.batch > 65535) {
    return false;
  }
  switch (l.head_size) {
    case 64: return launch_for_size<64>(state, l, query, key, value, mask, out, stream);
    case 128: return launch_for_size<128>(state, l, query, key, value, mask, out, stream);
    default: return false;
  }
}

}  // namespace hipdnn_ep::kernels::gpu
#endif  // HIPDNN_EP_PLATFORM_CUDA
