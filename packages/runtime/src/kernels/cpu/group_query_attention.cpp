// CPU kernel of GroupQueryAttention with its KV cache. Decode (one token per step) is
// bandwidth-bound, so attention reads the KV cache once per KV head for all the query heads that
// share it; the loops are written per (batch, KV head), the unit a GPU port maps to thread blocks,
// and large calls split those pairs over threads (parallel.h). Everything computes in float.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/rotary.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// ---------------------------------------------------------------- GroupQueryAttention

struct GqaShape {
  int64_t batch, seq, heads, kv_heads, head_size, past, present, total;
  bool packed;
};

template <typename T>
void gqa_typed(const hipdnn_ep_kernel_args_t& args, const GqaShape& g) {
  const int64_t* ia = args.int_attrs;
  const int64_t window = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_LOCAL_WINDOW_SIZE];
  const bool do_rotary = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_DO_ROTARY] != 0;
  const bool interleaved = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_ROTARY_INTERLEAVED] != 0;
  const double scale_attr = args.float_attrs[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_FLOAT_ATTR_SCALE];
  const auto softcap = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_FLOAT_ATTR_SOFTCAP]);
  const float scale = scale_attr == 0.0 ? 1.0f / std::sqrt(static_cast<float>(g.head_size)) : static_cast<float>(scale_attr);
  const int64_t d = g.head_size;
  const int64_t group = g.heads / g.kv_heads;
  const auto* seqlens = static_cast<const int32_t*>(args.inputs[5].data);
  const T* query = static_cast<const T*>(args.inputs[0].data);
  const T* key = g.packed ? nullptr : static_cast<const T*>(args.inputs[1].data);
  const T* value = g.packed ? nullptr : static_cast<const T*>(args.inputs[2].data);
  const T* past_k = g.past > 0 ? static_cast<const T*>(args.inputs[3].data) : nullptr;
  const T* past_v = g.past > 0 ? static_cast<const T*>(args.inputs[4].data) : nullptr;
  T* out = static_cast<T*>(args.outputs[0].data);
  T* present_k = static_cast<T*>(args.outputs[1].data);
  T* present_v = static_cast<T*>(args.outputs[2].data);
  const bool first_prompt = g.seq == g.total;
  const int64_t token_stride = g.packed ? (g.heads + 2 * g.kv_heads) * d : g.heads * d;
  const int64_t kv_token_stride = g.packed ? token_stride : g.kv_heads * d;
  // Offsets of head h of token (b, s) in query, key and value.
  auto q_at = [&](int64_t b, int64_t s, int64_t h) { return query + (b * g.seq + s) * token_stride + h * d; };
  auto k_at = [&](int64_t b, int64_t s, int64_t h) {
    return g.packed ? query + (b * g.seq + s) * token_stride + (g.heads + h) * d : key + (b * g.seq + s) * kv_token_stride + h * d;
  };
  auto v_at = [&](int64_t b, int64_t s, int64_t h) {
    return g.packed ? query + (b * g.seq + s) * token_stride + (g.heads + g.kv_heads + h) * d
                    : value + (b * g.seq + s) * kv_token_stride + h * d;
  };
  std::vector<RotaryCache> rotary;
  if (do_rotary) rotary.push_back(RotaryCache::read<T>(args.inputs[7], args.inputs[8]));
  const int64_t rotary_dim = do_rotary ? 2 * rotary[0].width : 0;

  // Every row's lengths first (a bad one fails before anything is written), then the (batch, KV
  // head) pairs, independent of each other, on as many threads as the work warrants.
  std::vector<int64_t> valids(static_cast<size_t>(g.batch)), past_lens(static_cast<size_t>(g.batch));
  for (int64_t b = 0; b < g.batch; ++b) {
    const int64_t valid = static_cast<int64_t>(seqlens[b]) + 1;
    if (valid < 1 || valid > g.present) {
      fail_invalid("seqlens_k[" + std::to_string(b) + "] = " + std::to_string(seqlens[b]) +
                   " does not fit the present buffer of " + std::to_string(g.present) + " positions");
    }
    const int64_t past_len = first_prompt ? 0 : valid - g.seq;
    if (past_len < 0 || past_len > g.past) {
      fail_invalid("seqlens_k[" + std::to_string(b) + "] = " + std::to_string(seqlens[b]) + " with " +
                   std::to_string(g.seq) + " new tokens needs " + std::to_string(past_len) +
                   " past positions, but past_key has " + std::to_string(g.past));
    }
    valids[b] = valid;
    past_lens[b] = past_len;
  }
  const int64_t work_per_pair = (g.present + g.seq) * d * group * g.seq * 2;
  parallel_ranges(g.batch * g.kv_heads, work_per_pair, [&](int64_t first, int64_t last) {
    std::vector<float> q(static_cast<size_t>(group * g.seq * d));  // this KV head's queries, rotated, in float
    std::vector<float> kv_row(static_cast<size_t>(d));
    std::vector<float> scores;                                      // [group * seq, keys]
    std::vector<float> acc(static_cast<size_t>(group * g.seq * d));
    for (int64_t pair = first; pair < last; ++pair) {
      const int64_t b = pair / g.kv_heads, kvh = pair % g.kv_heads;
      const int64_t valid = valids[b], past_len = past_lens[b];
      const int64_t keys = past_len + g.seq;  // positions written in present for this row
      scores.assign(static_cast<size_t>(group * g.seq * keys), 0.0f);
      const int64_t cache_base = (b * g.kv_heads + kvh) * g.present * d;
      const int64_t past_base = (b * g.kv_heads + kvh) * g.past * d;
      // present = the row's valid past prefix, the new tokens after it, zeros
      // beyond (as ONNX Runtime writes a present that does not share the past
      // buffer; with a shared buffer what lies beyond the valid length is unused).
      const int64_t copied = past_len;
      if (copied > 0) {
        std::memcpy(present_k + cache_base, past_k + past_base, static_cast<size_t>(copied * d) * sizeof(T));
        std::memcpy(present_v + cache_base, past_v + past_base, static_cast<size_t>(copied * d) * sizeof(T));
      }
      if (g.present > copied) {
        const int64_t tail = std::max(copied, past_len + g.seq);
        std::memset(static_cast<void*>(present_k + cache_base + tail * d), 0, static_cast<size_t>((g.present - tail) * d) * sizeof(T));
        std::memset(static_cast<void*>(present_v + cache_base + tail * d), 0, static_cast<size_t>((g.present - tail) * d) * sizeof(T));
      }
      for (int64_t s = 0; s < g.seq; ++s) {
        const int64_t position = first_prompt ? (s < valid ? s : 1) : past_len + s;
        const T* ks = k_at(b, s, kvh);
        for (int64_t i = 0; i < d; ++i) kv_row[i] = load(ks, i);
        if (do_rotary) rotary[0].apply(kv_row.data(), position, rotary_dim, interleaved);
        for (int64_t i = 0; i < d; ++i) store(present_k, cache_base + (past_len + s) * d + i, kv_row[i]);
        const T* vs = v_at(b, s, kvh);
        for (int64_t i = 0; i < d; ++i) present_v[cache_base + (past_len + s) * d + i] = vs[i];
        for (int64_t j = 0; j < group; ++j) {
          const T* qs = q_at(b, s, kvh * group + j);
          float* qf = q.data() + (j * g.seq + s) * d;
          for (int64_t i = 0; i < d; ++i) qf[i] = load(qs, i);
          if (do_rotary) rotary[0].apply(qf, position, rotary_dim, interleaved);
        }
      }
      // Scores: each key row is read once and dotted with every query of the group.
      const T* kc = present_k + cache_base;
      for (int64_t t = 0; t < keys; ++t) {
        for (int64_t i = 0; i < d; ++i) kv_row[i] = load(kc, t * d + i);
        for (int64_t r = 0; r < group * g.seq; ++r) {
          const float* qf = q.data() + r * d;
          float dot = 0.0f;
          for (int64_t i = 0; i < d; ++i) dot += qf[i] * kv_row[i];
          scores[r * keys + t] = dot * scale;
        }
      }
      // Causal (and windowed) softmax per query row.
      for (int64_t r = 0; r < group * g.seq; ++r) {
        const int64_t s = r % g.seq;
        const int64_t end = std::min(past_len + s + 1, std::max<int64_t>(valid, 1));  // keys [begin, end)
        const int64_t begin = window > 0 ? std::max<int64_t>(0, end - window) : 0;
        float* row = scores.data() + r * keys;
        float maximum = -std::numeric_limits<float>::infinity();
        for (int64_t t = begin; t < end; ++t) {
          if (softcap > 0.0f) row[t] = softcap * std::tanh(row[t] / softcap);
          maximum = std::max(maximum, row[t]);
        }
        float sum = 0.0f;
        for (int64_t t = 0; t < keys; ++t) {
          const float e = (t >= begin && t < end) ? std::exp(row[t] - maximum) : 0.0f;
          row[t] = e;
          sum += e;
        }
        for (int64_t t = begin; t < end; ++t) row[t] /= sum;
      }
      // Output: each value row is read once and accumulated into every query of the group.
      std::fill(acc.begin(), acc.end(), 0.0f);
      const T* vc = present_v + cache_base;
      for (int64_t t = 0; t < keys; ++t) {
        for (int64_t i = 0; i < d; ++i) kv_row[i] = load(vc, t * d + i);
        for (int64_t r = 0; r < group * g.seq; ++r) {
          const float p = scores[r * keys + t];
          if (p == 0.0f) continue;
          float* o = acc.data() + r * d;
          for (int64_t i = 0; i < d; ++i) o[i] += p * kv_row[i];
        }
      }
      for (int64_t r = 0; r < group * g.seq; ++r) {
        const int64_t j = r / g.seq, s = r % g.seq;
        T* o = out + (b * g.seq + s) * g.heads * d + (kvh * group + j) * d;
        for (int64_t i = 0; i < d; ++i) store(o, i, acc[r * d + i]);
      }
    }
  });
}

}  // namespace

void group_query_attention(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const int64_t* ia = args.int_attrs;
  GqaShape g{};
  const Dims q = dims_of(args.inputs[0]);
  g.batch = q[0];
  g.seq = q[1];
  g.heads = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_NUM_HEADS];
  g.kv_heads = ia[HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_KV_NUM_HEADS];
  g.packed = !is_present(args.inputs[1]);
  g.head_size = q[2] / (g.packed ? g.heads + 2 * g.kv_heads : g.heads);
  g.past = is_present(args.inputs[3]) ? args.inputs[3].dims[2] : 0;
  g.present = args.outputs[1].dims[2];
  const auto total = static_cast<int64_t>(*static_cast<const int32_t*>(args.inputs[6].data));
  if (total < g.seq || total > g.present) {
    fail_invalid("total_sequence_length " + std::to_string(total) + " must be in [sequence length " +
                 std::to_string(g.seq) + ", present length " + std::to_string(g.present) + "]");
  }
  g.total = total;
  if (g.batch == 0 || g.seq == 0) return;
  dispatch_float(args.inputs[0].dtype, "group_query_attention", [&](auto tag) {
    gqa_typed<typename decltype(tag)::type>(args, g);
  });
}

}  // namespace hipdnn_ep::kernels::cpu
