// CPU kernel of hipdnn_ep_kernel_attention (ONNX Attention without a KV cache). Each (batch, query
// head) pair is independent: its KV head's keys and values are read into float once, then every
// query row takes its scores over all keys, the softmax and the weighted sum of the values, in
// float. Pairs are split over threads (parallel.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention_layout.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/tensor_util.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// The mask's bias at an element: 0 or -inf from a BOOL mask, the value of a float one.
struct MaskBias {
  const void* data;
  int32_t dtype;
  float at(int64_t offset) const {
    switch (dtype) {
      case HIPDNN_EP_DTYPE_BOOL:
        return static_cast<const uint8_t*>(data)[offset] != 0 ? 0.0f : -std::numeric_limits<float>::infinity();
      case HIPDNN_EP_DTYPE_FLOAT16: return load(static_cast<const half_t*>(data), offset);
      default: return static_cast<const float*>(data)[offset];
    }
  }
};

template <typename T>
void attention_typed(const hipdnn_ep_kernel_args_t& args, const AttentionLayout& l) {
  const T* query = static_cast<const T*>(args.inputs[0].data);
  const T* key = static_cast<const T*>(args.inputs[1].data);
  const T* value = static_cast<const T*>(args.inputs[2].data);
  T* out = static_cast<T*>(args.outputs[0].data);
  const MaskBias mask{l.has_mask ? args.inputs[3].data : nullptr, l.mask_dtype};
  const int64_t group = l.q_heads / l.kv_heads;
  const int64_t d = l.head_size, dv = l.v_head_size;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int64_t work_per_pair = l.q_seq * l.kv_seq * (d + dv) + l.kv_seq * (d + dv);
  parallel_ranges(l.batch * l.q_heads, work_per_pair, [&](int64_t first, int64_t last) {
    std::vector<float> k(static_cast<size_t>(l.kv_seq * d)), v(static_cast<size_t>(l.kv_seq * dv));
    std::vector<float> q(static_cast<size_t>(d)), scores(static_cast<size_t>(l.kv_seq)), acc(static_cast<size_t>(dv));
    for (int64_t pair = first; pair < last; ++pair) {
      const int64_t b = pair / l.q_heads, h = pair % l.q_heads, kvh = h / group;
      for (int64_t j = 0; j < l.kv_seq; ++j) {
        const T* kr = key + b * l.k.batch + kvh * l.k.head + j * l.k.seq;
        const T* vr = value + b * l.v.batch + kvh * l.v.head + j * l.v.seq;
        for (int64_t c = 0; c < d; ++c) k[j * d + c] = load(kr, c);
        for (int64_t c = 0; c < dv; ++c) v[j * dv + c] = load(vr, c);
      }
      for (int64_t i = 0; i < l.q_seq; ++i) {
        const T* qr = query + b * l.q.batch + h * l.q.head + i * l.q.seq;
        for (int64_t c = 0; c < d; ++c) q[c] = load(qr, c);
        const int64_t mask_row = b * l.mask[0] + h * l.mask[1] + i * l.mask[2];
        float most = neg_inf;
        for (int64_t j = 0; j < l.kv_seq; ++j) {
          float s = 0.0f;
          if (l.causal && j > i) {
            s = neg_inf;
          } else {
            for (int64_t c = 0; c < d; ++c) s += q[c] * k[j * d + c];
            s *= l.scale;
            if (l.softcap > 0.0f) s = l.softcap * std::tanh(s / l.softcap);
            if (l.has_mask) s += mask.at(mask_row + j * l.mask[3]);
          }
          scores[j] = s;
          most = std::max(most, s);
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        float sum = 0.0f;
        if (most != neg_inf) {  // else every key is masked: the row's output is zeros
          for (int64_t j = 0; j < l.kv_seq; ++j) {
            const float p = std::exp(scores[j] - most);
            sum += p;
            if (p == 0.0f) continue;
            for (int64_t c = 0; c < dv; ++c) acc[c] += p * v[j * dv + c];
          }
        }
        T* yr = out + b * l.y.batch + h * l.y.head + i * l.y.seq;
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        for (int64_t c = 0; c < dv; ++c) store(yr, c, acc[c] * inv);
      }
    }
  });
}

}  // namespace

void attention(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const AttentionLayout l = attention_layout(args);
  if (l.batch == 0 || l.q_seq == 0) return;
  dispatch_float(args.inputs[0].dtype, "attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    attention_typed<T>(args, l);
  });
}

}  // namespace hipdnn_ep::kernels::cpu
