// GroupQueryAttention's decode (one new token per sequence) on the GPU backends: gqa_decode_kernel over
// splits of each row's keys and gqa_decode_merge_kernel; see group_query_attention.hip for the whole kernel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "gpu/gpu_device.h"
#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/group_query_attention.h"
#include "kernels/gpu/rotary.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

// Decode (one new token per sequence): one block per (key split, KV head, batch row, chunk of G query
// heads of the KV head's group; G is 1, or 2 for caches longer than kDecodeLongKeys, where sharing each
// key row between two heads saves more reads than the extra blocks win). A block's 256 threads form slots of `lanes`
// lanes (lanes * 8 >= head size, a power of two); a slot holds one key row, 8 elements per lane
// (one 16-byte load of float16), so a pass reads 256 / lanes keys at once, and kDecodeBatch passes'
// loads of K and V are in flight together. Each slot keeps a running max, sum and weighted sum of
// values per query head (online softmax); the slots are merged through shared memory at the end.
// A row's keys are split over up to `splits` blocks, enough to fill the GPU: the launch is sized for
// the longest row the cache holds, and each block sizes its split on the device from its row's valid
// keys (spread evenly over the splits, a whole number of batches of passes), so a short past in a long
// cache buffer is spread over as many blocks as a full one instead of filling the first split alone.
// One split: the block writes the output. Several: each writes its unnormalized sum, max and exp sum,
// and a second kernel merges the splits of each head (rescaling each by exp(its max - the overall max)).
// In the shared-buffer mode the new token's K and V come from the input (DecodeNewToken): the blocks whose
// split holds its position stage them (K rotated and rounded as the cache stores it), add that key before
// their cached ones, and the first block of the KV head's group writes them into the cache; no block reads
// that cache row, so no other block waits for the write.
constexpr int kDecodeThreads = 256;
constexpr int kDecodeBatch = 4;         // keys per slot whose loads are in flight together
constexpr int64_t kDecodeLongKeys = 4096;  // longer caches take 2 query heads per block

// Keys [begin, end) of batch row b's new token (end 0: the row's lengths were refused; recorded in `errors`
// when `report`, else by whichever kernel wrote the new token). The new token's key is end - 1.
__device__ __forceinline__ void decode_key_range(const GqaParams& g, const int32_t* seqlens, const int32_t* total,
                                                 int64_t b, DataErrorRecord* errors, bool report, RowLengths* len,
                                                 int64_t* begin, int64_t* end) {
  *begin = *end = 0;
  if (!row_lengths(g, seqlens, total, b, errors, report, len)) return;
  *end = imin(len->past_len + 1, len->valid);
  *begin = g.window > 0 ? imax(0, *end - g.window) : 0;
}

// 8 float16 values (one 16-byte load) as float.
__device__ __forceinline__ void halves8_to_float(uint4 raw, float (&out)[8]) {
  const auto* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

// The score of this lane's 8 query elements (scaled) against a key's, summed over the slot's `lanes` lanes
// (every lane of the warp takes part in the shuffles), then softcapped.
__device__ __forceinline__ float slot_score(const float (&q)[8], const float (&k)[8], int lanes, float softcap) {
  float dot = 0.0f;
#pragma unroll
  for (int e = 0; e < 8; ++e) dot += q[e] * k[e];
  for (int mask = lanes / 2; mask > 0; mask >>= 1) dot += lane_xor(dot, mask);
  return softcap > 0.0f ? softcap * tanhf(dot / softcap) : dot;
}

struct DecodeSplit {
  int lanes;        // lanes per key row
  int64_t quantum;  // the keys of one batch of passes: a split's keys are a multiple of it
  int64_t splits;   // splits launched per row (the most a row can use)
  bool vector;      // rows are read with 16-byte loads
};

// The keys of each split of a row of `keys` keys: the row spread evenly over the splits, rounded up to a
// whole number of quanta (so a short row uses fewer splits, each of at least one quantum).
__device__ __forceinline__ int64_t split_keys(int64_t keys, int64_t splits, int64_t quantum) {
  const int64_t per = (keys + splits - 1) / splits;
  return imax(quantum, (per + quantum - 1) / quantum * quantum);
}

// Splits > 1: partial[b, h, split] = the split's unnormalized output (d floats), then its max score
// and exp sum. One split: out[b, 0, h] directly.
// float16: two blocks an SM, for which the grid is sized (the new token's code took two query heads' form
// from 128 registers to 147, one block an SM: 44 -> 60 us at 8192 keys on an H100).
template <typename T, int G>
__global__ void __launch_bounds__(kDecodeThreads, sizeof(T) == 2 ? 2 : 1)
    gqa_decode_kernel(GqaParams g, const T* query, const T* cos, const T* sin, const int32_t* seqlens,
                      const int32_t* total, DecodeNewToken<T> new_token, T* present_k, T* present_v,
                      DecodeSplit split, float* partial, T* out) {
  allow_dependents();  // a GEMV after this one may launch meanwhile (gpu_common.h)
  wait_for_predecessor();  // launched overlapped: the query and the new K and V are the previous kernel's output
  __shared__ float slot_max[kDecodeThreads][G];
  __shared__ float slot_sum[kDecodeThreads][G];
  __shared__ float reduce[kDecodeThreads * 8];
  __shared__ float q_shared[G * kMaxHeadSize];
  __shared__ float new_k[kMaxHeadSize], new_v[kMaxHeadSize];  // the new token's, where this block adds it
  const int64_t d = g.head_size, group = g.heads / g.kv_heads;
  const int64_t head_blocks = (group + G - 1) / G;
  const int64_t b = blockIdx.z, kvh = blockIdx.y / head_blocks;
  const int64_t head0 = kvh * group + (blockIdx.y % head_blocks) * G;  // this block's first query head
  const int heads = static_cast<int>(imin(G, (kvh + 1) * group - head0));
  const bool fresh = new_token.key != nullptr;
  const bool checks = fresh && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0;  // once per row
  RowLengths len;
  int64_t begin, end;
  decode_key_range(g, seqlens, total, b, new_token.errors, checks, &len, &begin, &end);
  const int64_t per_split = split_keys(end - begin, split.splits, split.quantum);
  const int64_t k_lo = begin + blockIdx.x * per_split;
  const int64_t k_hi = imin(end, k_lo + per_split);
  if (k_lo >= k_hi) return;  // past the row's keys: the merge reads only splits that have some
  const int lanes = split.lanes, slots = kDecodeThreads / lanes;
  const int slot = threadIdx.x / lanes, sub = threadIdx.x % lanes;
  const int64_t i0 = static_cast<int64_t>(sub) * 8;  // this lane's 8 elements of a row

  // The block's queries, rotated, staged in shared memory (8 elements per thread, loads issued
  // together); then this lane's elements of each, times the scale.
  const int64_t position = g.do_rotary ? token_position(len, 0) : 0;
  const bool rotate = g.do_rotary && position >= 0 && position < g.rotary_positions;
  if (checks && g.do_rotary && !rotate) report_error(new_token.errors, kErrorGqaRotaryPosition, position,
                                                     g.rotary_positions);
  // A bad position leaves the cache row as it was (as the present kernel does) and reads it from there.
  const int64_t new_key = end - 1;
  const bool adds_new = fresh && (rotate || !g.do_rotary) && new_key < k_hi;  // the split holding it
  const int64_t cached_hi = adds_new ? new_key : k_hi;                         // keys read from the cache
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
  if (adds_new) {
    const T* key_row = new_token.key + b * g.kv_token_stride + kvh * d;
    const T* value_row = new_token.value + b * g.kv_token_stride + kvh * d;
    for (int64_t t = threadIdx.x; t < pieces; t += kDecodeThreads) {
      const int64_t c0 = t * 8;
      float k[8];
      rotated8(key_row, c0, d, cos + position * g.rotary_width, sin + position * g.rotary_width, g.rotary_dim,
               g.interleaved, rotate, k);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        if (c0 + e < d) {
          T stored;
          store(&stored, 0, k[e]);  // as the cache holds it
          new_k[c0 + e] = load(&stored, 0);
          new_v[c0 + e] = load(value_row, c0 + e);
        }
      }
    }
  }
  __syncthreads();
  if (adds_new && blockIdx.y % head_blocks == 0) {  // one block of the KV head writes the cache row
    const int64_t row = ((b * g.kv_heads + kvh) * g.present + new_key) * d;
    for (int64_t i = threadIdx.x; i < d; i += kDecodeThreads) {
      store(present_k, row + i, new_k[i]);
      store(present_v, row + i, new_v[i]);  // exact: the value as read
    }
  }
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
  if (adds_new) {  // the new key first, in slot 0 (every lane computes its score: the shuffles span the warp)
    float k[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) k[e] = i0 + e < d ? new_k[i0 + e] : 0.0f;
#pragma unroll
    for (int r = 0; r < G; ++r) {
      const float dot = slot_score(q[r], k, lanes, g.softcap);
      if (slot != 0) continue;
      const float mx = fmaxf(m[r], dot), c = expf(m[r] - mx), p = expf(dot - mx);
      l[r] = l[r] * c + p;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] = acc[r][e] * c + (i0 + e < d ? p * new_v[i0 + e] : 0.0f);
      m[r] = mx;
    }
  }
  const T* k_head = present_k + (b * g.kv_heads + kvh) * g.present * d;
  const T* v_head = present_v + (b * g.kv_heads + kvh) * g.present * d;
  // Every thread runs the same passes (the lane sums shuffle across slots of a warp); keys past
  // k_hi are masked.
  for (int64_t base = k_lo; base < cached_hi; base += static_cast<int64_t>(slots) * kDecodeBatch) {
    float kx[kDecodeBatch][8], vx[kDecodeBatch][8];
    if (sizeof(T) == 2 && split.vector) {
      // float16 rows of 16-byte aligned pieces: every load of the batch is issued before any is used. (Each
      // load behind its own branch, converted right away, made the batch's 8 loads wait for one another:
      // the memory latency 8 times a pass.)
      uint4 kr[kDecodeBatch], vr[kDecodeBatch];
#pragma unroll
      for (int j = 0; j < kDecodeBatch; ++j) {
        const int64_t key = base + j * slots + slot;
        const bool ok = key < cached_hi && i0 < d;
        const int64_t at = ok ? key * d + i0 : 0;
        kr[j] = ok ? __ldg(reinterpret_cast<const uint4*>(k_head + at)) : make_uint4(0, 0, 0, 0);
        vr[j] = ok ? __ldg(reinterpret_cast<const uint4*>(v_head + at)) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int j = 0; j < kDecodeBatch; ++j) {
        halves8_to_float(kr[j], kx[j]);
        halves8_to_float(vr[j], vx[j]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < kDecodeBatch; ++j) {
        const int64_t key = base + j * slots + slot;
        if (key < cached_hi) {
          load8(k_head + key * d, i0, d, split.vector, kx[j]);
          load8(v_head + key * d, i0, d, split.vector, vx[j]);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) kx[j][e] = vx[j][e] = 0.0f;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < G; ++r) {
      float s[kDecodeBatch];
      float mx = m[r];
#pragma unroll
      for (int j = 0; j < kDecodeBatch; ++j) {
        const float dot = slot_score(q[r], kx[j], lanes, g.softcap);
        s[j] = base + j * slots + slot < cached_hi ? dot : -INFINITY;
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
                                                               int64_t quantum, int64_t splits, T* out) {
  allow_dependents();  // a GEMV after this one may launch meanwhile (gpu_common.h)
  wait_for_predecessor();  // launched overlapped: the partial sums are the decode kernel's
  __shared__ float split_max[kDecodeMaxSplits], split_sum[kDecodeMaxSplits];
  const int64_t h = blockIdx.x, b = blockIdx.y, d = g.head_size;
  RowLengths len;
  int64_t begin, end;
  decode_key_range(g, seqlens, total, b, nullptr, false, &len, &begin, &end);
  if (end <= begin) return;  // refused lengths: the row stays as it was, reported by the decode kernel
  const int64_t per_split = split_keys(end - begin, splits, quantum);
  const int used = static_cast<int>((end - begin + per_split - 1) / per_split);
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

// Decode: gqa_decode_kernel over the splits of each row's keys, then the merge when there are several.
template <typename T, int G>
void launch_decode_heads(hipdnn_ep_state_t* state, const GqaParams& g, const T* query, const T* cos, const T* sin,
                         const int32_t* seqlens, const int32_t* total, DecodeNewToken<T> new_token, T* present_k,
                         T* present_v, T* out, DecodeSplit split, hipStream_t stream) {
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
  launch_overlapped<gqa_decode_kernel<T, G>>(grid, kDecodeThreads, 0, stream, g, query, cos, sin, seqlens, total,
                                             new_token, present_k, present_v, split, partial_data, out);
  check_launch("group_query_attention (decode)");
  if (split.splits > 1) {
    launch_overlapped<gqa_decode_merge_kernel<T>>(dim3(static_cast<unsigned>(g.heads), static_cast<unsigned>(g.batch)),
                                                  128, 0, stream, g, seqlens, total,
                                                  static_cast<const float*>(partial_data), split.quantum,
                                                  split.splits, out);
    check_launch("group_query_attention (decode merge)");
  }
}

}  // namespace

template <typename T>
void launch_gqa_decode(hipdnn_ep_state_t* state, const GqaParams& g, const T* query, const T* cos, const T* sin,
                       const int32_t* seqlens, const int32_t* total, DecodeNewToken<T> new_token, T* present_k,
                       T* present_v, T* out, hipStream_t stream) {
  DecodeSplit split{};
  split.lanes = 1;
  while (split.lanes * 8 < g.head_size) split.lanes *= 2;
  split.vector = (g.head_size * static_cast<int64_t>(sizeof(T))) % 16 == 0 && aligned(present_k, 16) &&
                 aligned(present_v, 16);
  const int64_t group = g.heads / g.kv_heads;
  split.quantum = static_cast<int64_t>(kDecodeThreads / split.lanes) * kDecodeBatch;
  const int64_t keys = g.window > 0 ? std::min(g.present, g.window) : g.present;  // per row at most
  // Query heads per block. Measured on an H100 with Llama-3.1-8B's heads (32 query, 8 KV, size 128), one per
  // block (4 times the blocks, each key row read by 4 of them, mostly from L2) against the whole group of 4:
  // 10.1 / 16.3 / 19.4 us against 18.4 / 19.6 / 28.6 at pasts of 128 / 1024 / 2048 in a 4096-key cache;
  // at 8192 keys two per block are best (39.5 us against 50.6 for the group, 49.9 for one).
  const int heads = keys > kDecodeLongKeys && group >= 2 ? 2 : 1;
  // Enough splits for about two blocks per multiprocessor, at most one per quantum of the longest row.
  const int sms = gpu_device(state).multiprocessors();
  const int64_t blocks = g.batch * g.kv_heads * ((group + heads - 1) / heads);
  const int64_t wanted = std::min<int64_t>(kDecodeMaxSplits, std::max<int64_t>(1, (2 * sms + blocks - 1) / blocks));
  split.splits = std::max<int64_t>(1, std::min(wanted, (keys + split.quantum - 1) / split.quantum));
  if (heads == 2) {
    return launch_decode_heads<T, 2>(state, g, query, cos, sin, seqlens, total, new_token, present_k, present_v, out,
                                     split, stream);
  }
  launch_decode_heads<T, 1>(state, g, query, cos, sin, seqlens, total, new_token, present_k, present_v, out, split,
                            stream);
}

template void launch_gqa_decode<float>(hipdnn_ep_state_t*, const GqaParams&, const float*, const float*, const float*,
                                       const int32_t*, const int32_t*, DecodeNewToken<float>, float*, float*, float*,
                                       hipStream_t);
template void launch_gqa_decode<__half>(hipdnn_ep_state_t*, const GqaParams&, const __half*, const __half*,
                                        const __half*, const int32_t*, const int32_t*, DecodeNewToken<__half>, __half*,
                                        __half*, __half*, hipStream_t);

}  // namespace hipdnn_ep::kernels::gpu
