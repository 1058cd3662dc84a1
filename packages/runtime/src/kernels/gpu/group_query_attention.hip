// GroupQueryAttention with its KV cache on the GPU backends, computed in float whatever the storage dtype, following
// the CPU kernel (kernels/cpu/group_query_attention.cpp) operation for operation where the order of a sum does not matter.
//
// group_query_attention: one to three launches on the stream.
//   1. the present cache (a thread per 8 elements of a row): the row's valid past (not copied when
//      present and past are one buffer, the shared-buffer mode), then the new K (rotated) and V,
//      then zeros (not written in the shared-buffer mode, where those positions are unused). A decode
//      step in the shared-buffer mode skips it: its decode kernel writes the new K and V;
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
//      3. gqa_decode_merge_kernel combines the splits. The decode kernels live in
//      group_query_attention_decode.hip.
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
      const T *k_row, *v_row;
      new_kv_start(g, query, key, value, &k_row, &v_row);
      k_row += (b * g.seq + s) * g.kv_token_stride + kvh * d;
      v_row += (b * g.seq + s) * g.kv_token_stride + kvh * d;
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
    T* out = static_cast<T*>(args.outputs[0].data);
    if (g.seq == 1 && shared) {  // the decode kernel writes the new token into the cache
      DecodeNewToken<T> new_token;
      new_kv_start(g, data(0), data(1), data(2), &new_token.key, &new_token.value);
      new_token.errors = errors;
      launch_gqa_decode<T>(state, g, data(0), cos, sin, seqlens, total, new_token, present_k, present_v, out, stream);
      return;
    }
    const int64_t cache_pieces = g.batch * g.kv_heads * (shared ? g.seq : g.present) * ((g.head_size + 7) / 8);
    gqa_present_kernel<<<grid_for(cache_pieces), kBlock, 0, stream>>>(
        g, data(0), data(1), data(2), data(3), data(4), seqlens, total, cos, sin, present_k, present_v,
        errors);
    check_launch("group_query_attention (present)");
    if (g.seq == 1) {
      launch_gqa_decode<T>(state, g, data(0), cos, sin, seqlens, total, DecodeNewToken<T>{}, present_k, present_v, out,
                           stream);
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
