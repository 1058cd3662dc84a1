// What the GroupQueryAttention kernels share (group_query_attention.hip, the decode in
// group_query_attention_decode.hip and, on CUDA, the tensor-core prefill in group_query_attention_flash.hip):
// the call's parameters, each batch row's lengths as the device data gives them, and the decode and flash
// launches.
#ifndef HIPDNN_EP_KERNELS_GPU_GROUP_QUERY_ATTENTION_H_
#define HIPDNN_EP_KERNELS_GPU_GROUP_QUERY_ATTENTION_H_

#include <cstdint>

#include "kernels/gpu/gpu_common.h"

namespace hipdnn_ep::kernels::gpu {

constexpr int kMaxHeadSize = 256;  // the GPU kernels' largest head size

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

// Where the new tokens' K and V start (token 0 of batch row 0, KV head 0): after the query heads in packed
// QKV, else the key and value inputs. Token t's rows of KV head h lie t * kv_token_stride + h * head_size
// further on (packed, kv_token_stride is the packed token's stride).
template <typename T>
__host__ __device__ inline void new_kv_start(const GqaParams& g, const T* query, const T* key, const T* value,
                                             const T** k0, const T** v0) {
  *k0 = g.packed ? query + g.heads * g.head_size : key;
  *v0 = g.packed ? query + (g.heads + g.kv_heads) * g.head_size : value;
}

// Decode in the shared-buffer mode: the decode kernel writes the new token's K (rotated) and V into the
// cache itself, with the checks the present kernel would make, instead of a launch before it. key and value:
// where the new rows start (new_kv_start); key null: the present kernel has written them.
template <typename T>
struct DecodeNewToken {
  const T* key = nullptr;
  const T* value = nullptr;
  DataErrorRecord* errors = nullptr;
};

// Decode (one new token per sequence; group_query_attention_decode.hip): the output from the present
// cache, in one or two launches. Instantiated for dispatch_float_gpu's types (float and __half).
template <typename T>
void launch_gqa_decode(hipdnn_ep_state_t* state, const GqaParams& g, const T* query, const T* cos, const T* sin,
                       const int32_t* seqlens, const int32_t* total, DecodeNewToken<T> new_token, T* present_k,
                       T* present_v, T* out, hipStream_t stream);

#if defined(HIPDNN_EP_PLATFORM_CUDA)
// Prefill on tensor cores where it applies (float16, head size 64 or 128, 16-byte aligned caches, a
// GPU of sm_80 or later); false: the caller runs the scalar attention kernel.
bool launch_gqa_flash(const GqaParams& g, const __half* query, const __half* cos, const __half* sin,
                      const int32_t* seqlens, const int32_t* total, const __half* present_k, const __half* present_v,
                      __half* out, hipStream_t stream);
#endif

}  // namespace hipdnn_ep::kernels::gpu

#endif  // HIPDNN_EP_KERNELS_GPU_GROUP_QUERY_ATTENTION_H_
