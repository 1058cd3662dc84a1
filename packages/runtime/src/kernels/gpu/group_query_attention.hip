// GroupQueryAttention with its KV cache on the GPU backends, computed in float whatever the storage dtype, following
// the CPU kernel (kernels/cpu/group_query_attention.cpp) operation for operation where the order of a sum does not matter.
//
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
//      head sizes and AMD run gqa_attention_kernel, scalar float through shared memory. The tensor-core
//      kernel lives in group_query_attention_flash.hip; what both files use in group_query_attention.h.
//   2. decode (one new token): gqa_decode_kernel reads each key and value row once with 16-byte
//      loads (8 elements a lane), all query heads of a KV head's group per block, an online softmax
//      per slot of lanes merged in shared memory. A short cache is one block per KV head, which
//      writes the output; a longer one is split over about two blocks per multiprocessor, and
//      3. gqa_decode_merge_kernel combines the splits.
//   seqlens_k, total_sequence_length and the rotary positions are device data: the kernels check
//   them, skip what a bad one would reach, and record it for the host to report at the run's wait
//   (gpu_common.h: data checks); no launch waits, so a decode step can be captured.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>

#include "gpu/gpu_device.h"
#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/gpu/group_query_attention.h"
#include "kernels/gpu/rotary.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

// ---------------------------------------------------------------- GroupQueryAttention

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


}  // namespace

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
      if (launch_gqa_flash(g, data(0), cos, sin, seqlens, total, present_k, present_v, out, stream)) return;
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
