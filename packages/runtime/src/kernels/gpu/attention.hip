// GPU kernel of hipdnn_ep_kernel_attention (ONNX Attention without a KV cache): one launch for what
// the decomposed graph does in six or more (scores, scale, mask, softmax, product with V, head
// transposes), the scores never written to memory.
//
// A block of kAttnRows warps takes kAttnRows consecutive query rows of one (batch, query head), one
// row per warp. Keys and values pass through shared memory in tiles of `tile` rows (as float, shared
// by the block's rows); in a tile, lane j scores key j against the warp's row, the warp keeps the
// running max and sum of the online softmax, and each lane accumulates the output values c =
// lane + 32 n (NV of them, NV = ceil(v_head_size / 32)). Causal blocks stop at their last row's
// key. Scalar float math, for what the tensor-core kernel (attention_flash.hip: float16, head sizes 64
// and 128, CUDA) does not take.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "gpu/gpu_device.h"
#include "kernels/attention_layout.h"
#include "kernels/gpu/attention.h"
#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

constexpr int kAttnRows = 8;                  // warps (query rows) per block
constexpr int kAttnThreads = kAttnRows * 32;
constexpr int kAttnMaxTile = 32;              // keys per tile: one per lane
constexpr int64_t kAttnSharedBytes = 48 * 1024;
constexpr int64_t kAttnMaxHeadSize = 512;     // query/key head size (shared memory)
constexpr int kAttnMaxValueChunks = 8;        // v_head_size <= 256 (registers)

struct AttnParams {
  AttentionLayout l;
  int tile;   // keys per tile
  int pitch;  // floats per key row in shared memory (odd: lanes reading distinct keys hit distinct banks)
  int64_t row_tiles;
};

// dst[c] = src[c] as float for c < n (zeros when !valid), by the 32 lanes of a warp: each lane's loads of
// the row are issued before any is stored (kRowLoads at a time), so their latencies overlap.
constexpr int kRowLoads = 8;
template <typename T>
__device__ __forceinline__ void load_row(float* dst, const T* src, int n, bool valid, int lane) {
  for (int c0 = 0; c0 < n; c0 += 32 * kRowLoads) {
    float v[kRowLoads];
#pragma unroll
    for (int u = 0; u < kRowLoads; ++u) {
      const int c = c0 + u * 32 + lane;
      v[u] = valid && c < n ? static_cast<float>(load(src, c)) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kRowLoads; ++u) {
      const int c = c0 + u * 32 + lane;
      if (c < n) dst[c] = v[u];
    }
  }
}

template <typename T, int NV>
__global__ void __launch_bounds__(kAttnThreads) attention_kernel(AttnParams p, const T* query, const T* key,
                                                                 const T* value, const void* mask, T* out) {
  extern __shared__ float attn_shared[];
  const AttentionLayout& l = p.l;
  const int64_t d = l.head_size, dv = l.v_head_size;
  float* q_s = attn_shared;                  // [kAttnRows][d]
  float* k_s = q_s + kAttnRows * d;          // [tile][pitch]
  float* v_s = k_s + p.tile * p.pitch;       // [tile][dv]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t group = l.q_heads / l.kv_heads;
  const int64_t blocks = l.batch * l.q_heads * p.row_tiles;
  for (int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const int64_t row_tile = blk % p.row_tiles, pair = blk / p.row_tiles;
    const int64_t b = pair / l.q_heads, h = pair % l.q_heads, kvh = h / group;
    const int64_t r0 = row_tile * kAttnRows;
    const int64_t i = r0 + warp;  // this warp's query row
    const bool row_valid = i < l.q_seq;
    __syncthreads();  // the previous block's reads of shared memory are done
    {  // this warp's query row: lanes along the row, no index division
      const T* qr = query + b * l.q.batch + h * l.q.head + i * l.q.seq;
      load_row(q_s + warp * d, qr, static_cast<int>(d), row_valid, lane);
    }
    const int64_t last_row = imin(r0 + kAttnRows, l.q_seq) - 1;
    const int64_t key_end = l.causal ? imin(l.kv_seq, last_row + 1) : l.kv_seq;
    const T* k_head = key + b * l.k.batch + kvh * l.k.head;
    const T* v_head = value + b * l.v.batch + kvh * l.v.head;
    const int64_t mask_row = b * l.mask[0] + h * l.mask[1] + i * l.mask[2];
    float m = -INFINITY, sum = 0.0f, o[NV];
#pragma unroll
    for (int n = 0; n < NV; ++n) o[n] = 0.0f;
    for (int64_t t0 = 0; t0 < key_end; t0 += p.tile) {
      __syncthreads();  // q_s written; the previous tile's reads done
      // a warp per key row (rows warp, warp + kAttnRows, ...), lanes along it: coalesced, no index division
      for (int r = warp; r < p.tile; r += kAttnRows) {
        const int64_t j = t0 + r;
        const bool valid = j < key_end;
        load_row(k_s + r * p.pitch, k_head + (valid ? j : 0) * l.k.seq, static_cast<int>(d), valid, lane);
        load_row(v_s + r * dv, v_head + (valid ? j : 0) * l.v.seq, static_cast<int>(dv), valid, lane);
      }
      __syncthreads();
      if (!row_valid) continue;  // warp-uniform
      const int64_t j = t0 + lane;
      float s = -INFINITY;
      if (lane < p.tile && j < key_end && !(l.causal && j > i)) {
        const float* kr = k_s + lane * p.pitch;
        const float* qr = q_s + warp * d;
        float dot = 0.0f;
        for (int64_t c = 0; c < d; ++c) dot = fmaf(qr[c], kr[c], dot);
        s = dot * l.scale;
        if (l.softcap > 0.0f) s = l.softcap * tanhf(s / l.softcap);
        if (l.has_mask) {
          const int64_t at = mask_row + j * l.mask[3];
          s += mask_bias(mask, l.mask_dtype, at);
        }
      }
      float tile_max = s;
      for (int x = 16; x > 0; x /= 2) tile_max = fmaxf(tile_max, lane_xor(tile_max, x));
      const float m_new = fmaxf(m, tile_max);
      const float base = m_new == -INFINITY ? 0.0f : m_new;  // no key attended yet: every p is 0
      const float pj = expf(s - base);
      const float alpha = expf(m - base);
      float tile_sum = pj;
      for (int x = 16; x > 0; x /= 2) tile_sum += lane_xor(tile_sum, x);
      sum = sum * alpha + tile_sum;
      m = m_new;
#pragma unroll
      for (int n = 0; n < NV; ++n) o[n] *= alpha;
      const int tile_keys = static_cast<int>(imin(p.tile, key_end - t0));
      for (int jj = 0; jj < tile_keys; ++jj) {
        const float w = lane_broadcast(pj, jj);
        if (w == 0.0f) continue;  // warp-uniform: a masked key
        const float* vr = v_s + jj * dv;
#pragma unroll
        for (int n = 0; n < NV; ++n) {
          const int64_t c = lane + 32 * n;
          if (c < dv) o[n] = fmaf(w, vr[c], o[n]);
        }
      }
    }
    if (row_valid) {
      T* yr = out + b * l.y.batch + h * l.y.head + i * l.y.seq;
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // every key masked: zeros
#pragma unroll
      for (int n = 0; n < NV; ++n) {
        const int64_t c = lane + 32 * n;
        if (c < dv) store(yr, c, o[n] * inv);
      }
    }
  }
}

template <typename T, int NV>
void launch_attention(const AttnParams& p, const hipdnn_ep_kernel_args_t& args, int64_t shared_bytes,
                      hipStream_t stream) {
  const int64_t blocks = p.l.batch * p.l.q_heads * p.row_tiles;
  const auto grid = static_cast<unsigned>(blocks < (int64_t{1} << 20) ? blocks : (int64_t{1} << 20));
  attention_kernel<T, NV><<<grid, kAttnThreads, static_cast<size_t>(shared_bytes), stream>>>(
      p, static_cast<const T*>(args.inputs[0].data), static_cast<const T*>(args.inputs[1].data),
      static_cast<const T*>(args.inputs[2].data), p.l.has_mask ? args.inputs[3].data : nullptr,
      static_cast<T*>(args.outputs[0].data));
}

}  // namespace

void attention(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  AttnParams p{};
  p.l = attention_layout(args);
  const AttentionLayout& l = p.l;
  if (l.batch == 0 || l.q_seq == 0 || l.q_heads == 0) return;
  if (l.head_size > kAttnMaxHeadSize || l.v_head_size > 32 * kAttnMaxValueChunks) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "the GPU kernel takes head sizes up to " + std::to_string(kAttnMaxHeadSize) +
                                           " (query/key) and " + std::to_string(32 * kAttnMaxValueChunks) +
                                           " (value); got " + std::to_string(l.head_size) + " and " +
                                           std::to_string(l.v_head_size) + " (the cpu backend takes any)");
  }
  p.pitch = static_cast<int>(l.head_size | 1);
  int64_t shared_bytes = 0;
  for (p.tile = kAttnMaxTile;; p.tile /= 2) {
    shared_bytes = static_cast<int64_t>(sizeof(float)) *
                   (kAttnRows * l.head_size + int64_t{p.tile} * p.pitch + int64_t{p.tile} * l.v_head_size);
    if (shared_bytes <= kAttnSharedBytes || p.tile == 1) break;
  }
  p.row_tiles = (l.q_seq + kAttnRows - 1) / kAttnRows;
  const hipStream_t stream = current_stream(state);
  const int chunks = static_cast<int>((l.v_head_size + 31) / 32);
  dispatch_float_gpu(args.inputs[0].dtype, "attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
#if defined(HIPDNN_EP_PLATFORM_CUDA)
    if constexpr (std::is_same_v<T, __half>) {
      if (launch_attention_flash(state, l, static_cast<const __half*>(args.inputs[0].data),
                                 static_cast<const __half*>(args.inputs[1].data),
                                 static_cast<const __half*>(args.inputs[2].data),
                                 l.has_mask ? args.inputs[3].data : nullptr,
                                 static_cast<__half*>(args.outputs[0].data), stream)) {
        return;
      }
    }
#endif
    if (chunks <= 1) {
      launch_attention<T, 1>(p, args, shared_bytes, stream);
    } else if (chunks <= 2) {
      launch_attention<T, 2>(p, args, shared_bytes, stream);
    } else if (chunks <= 4) {
      launch_attention<T, 4>(p, args, shared_bytes, stream);
    } else {
      launch_attention<T, 8>(p, args, shared_bytes, stream);
    }
  });
  check_launch("attention");
}

}  // namespace hipdnn_ep::kernels::gpu
