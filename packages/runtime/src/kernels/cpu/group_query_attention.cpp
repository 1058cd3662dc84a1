// CPU kernels of the LLM ops: int4 MatMulNBits, RMS normalization (with the
// skip sum), RotaryEmbedding and GroupQueryAttention with its KV cache.
//
// Decode (one token per step) is bandwidth-bound, so each kernel touches the
// big operand once: matmul_nbits streams every weight byte once for all rows of
// A (dequantizing a block at a time in registers), and attention reads the KV
// cache once per KV head for all the query heads that share it. The loops are
// written per (output column) and per (batch, KV head), the units a GPU port
// maps to thread blocks. Everything computes in float.
//
// Large calls run on several threads (parallel_ranges): matmul_nbits splits the output columns,
// group_query_attention the (batch, KV head) pairs. Each unit is computed exactly as on one thread,
// so the results do not depend on the thread count.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// A tensor of dtype T read as float into a dense vector.
template <typename T>
std::vector<float> to_float_vector(const hipdnn_ep_tensor_ref_t& t) {
  const int64_t n = element_count(t);
  std::vector<float> out(static_cast<size_t>(n));
  const T* src = static_cast<const T*>(t.data);
  for (int64_t i = 0; i < n; ++i) out[i] = load(src, i);
  return out;
}

// Multiply-adds below which a call stays on the calling thread: starting a thread costs tens of
// microseconds, about what this much work takes.
constexpr int64_t kMinWorkPerThread = int64_t{1} << 18;

// Calls fn(begin, end) on contiguous ranges covering [0, items), on up to one thread per hardware
// thread, with at least kMinWorkPerThread units of work (items * work_per_item in all) per
// thread. The calling thread takes the first range. The first exception thrown is rethrown
// after every thread has finished.
template <typename Fn>
void parallel_ranges(int64_t items, int64_t work_per_item, Fn&& fn) {
  const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t by_work = std::max<int64_t>(1, items * std::max<int64_t>(work_per_item, 1) / kMinWorkPerThread);
  const int64_t threads = std::min({hardware, by_work, std::max<int64_t>(items, 1)});
  if (threads <= 1) {
    fn(int64_t{0}, items);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  auto guarded = [&](int64_t begin, int64_t end) {
    try {
      fn(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(guarded, items * t / threads, items * (t + 1) / threads);
  guarded(0, items / threads);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// ---------------------------------------------------------------- MatMulNBits

// y[m, n] = sum_k a[m, k] * (q[n, k] - zp[n, blk]) * scale[n, blk]
//         = sum_blk scale * (sum_{k in blk} a[m, k] q[n, k] - zp * sum_{k in blk} a[m, k])
// The per-block sums of A are computed once; B is then read once, column by
// column, with each 4-bit block unpacked to floats and dotted with every row.
template <typename T>
void matmul_nbits_typed(const hipdnn_ep_kernel_args_t& args, int64_t k, int64_t n, int64_t block) {
  const hipdnn_ep_tensor_ref_t& a_ref = args.inputs[0];
  const int64_t m = element_count(a_ref) / k;
  const int64_t blocks = (k + block - 1) / block;
  const int64_t blob = block / 2;
  const auto* b = static_cast<const uint8_t*>(args.inputs[1].data);
  const T* scales = static_cast<const T*>(args.inputs[2].data);
  const bool has_zp = args.n_inputs > 3 && is_present(args.inputs[3]);
  const auto* zp = has_zp ? static_cast<const uint8_t*>(args.inputs[3].data) : nullptr;
  const int64_t zp_stride = (blocks + 1) / 2;
  const bool has_bias = args.n_inputs > 4 && is_present(args.inputs[4]);
  const T* bias = has_bias ? static_cast<const T*>(args.inputs[4].data) : nullptr;
  T* y = static_cast<T*>(args.outputs[0].data);

  // A in float, zero-padded to whole blocks, and its per-block sums.
  const int64_t kp = blocks * block;
  std::vector<float> a(static_cast<size_t>(m * kp), 0.0f);
  std::vector<float> a_sums(static_cast<size_t>(m * blocks), 0.0f);
  const T* a_src = static_cast<const T*>(a_ref.data);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < k; ++i) a[r * kp + i] = load(a_src, r * k + i);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      float s = 0.0f;
      for (int64_t i = 0; i < block; ++i) s += a[r * kp + blk * block + i];
      a_sums[r * blocks + blk] = s;
    }
  }
  parallel_ranges(n, m * kp, [&](int64_t first, int64_t last) {
    std::vector<float> w(static_cast<size_t>(block));
    std::vector<float> acc(static_cast<size_t>(m));
    for (int64_t col = first; col < last; ++col) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      const uint8_t* col_bytes = b + col * blocks * blob;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const uint8_t* bytes = col_bytes + blk * blob;
        for (int64_t i = 0; i < blob; ++i) {
          w[2 * i] = static_cast<float>(bytes[i] & 0x0F);
          w[2 * i + 1] = static_cast<float>(bytes[i] >> 4);
        }
        const float scale = load(scales, col * blocks + blk);
        float zero = 8.0f;
        if (has_zp) {
          const uint8_t packed = zp[col * zp_stride + blk / 2];
          zero = static_cast<float>((blk % 2 == 0) ? (packed & 0x0F) : (packed >> 4));
        }
        for (int64_t r = 0; r < m; ++r) {
          const float* ar = a.data() + r * kp + blk * block;
          float dot = 0.0f;
          for (int64_t i = 0; i < block; ++i) dot += ar[i] * w[i];
          acc[r] += scale * (dot - zero * a_sums[r * blocks + blk]);
        }
      }
      const float bias_value = has_bias ? static_cast<float>(load(bias, col)) : 0.0f;
      for (int64_t r = 0; r < m; ++r) store(y, r * n + col, acc[r] + bias_value);
    }
  });
}

// ---------------------------------------------------------------- RMS norm

template <typename T>
void rms_norm_typed(const hipdnn_ep_kernel_args_t& args, size_t axis, float epsilon) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const Dims normalized(dims.begin() + static_cast<std::ptrdiff_t>(axis), dims.end());
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t size = element_count(normalized);
  // Parameters broadcast to dense float vectors (Scale, Bias over the
  // normalized dims; Skip over X).
  auto dense = [&](int32_t index, const Dims& target) {
    std::vector<float> values;
    if (index >= args.n_inputs || !is_present(args.inputs[index])) return values;
    const hipdnn_ep_tensor_ref_t& t = args.inputs[index];
    values.assign(static_cast<size_t>(element_count(target)), 0.0f);
    const std::array<Dims, 2> strides{contiguous_strides(target), broadcast_strides(dims_of(t), target)};
    const T* src = static_cast<const T*>(t.data);
    for_each_row<2>(target, strides, [&](const std::array<int64_t, 2>& off, int64_t count, const std::array<int64_t, 2>& st) {
      for (int64_t i = 0; i < count; ++i) values[off[0] + i * st[0]] = load(src, off[1] + i * st[1]);
    });
    return values;
  };
  const std::vector<float> scale = dense(1, normalized);
  const std::vector<float> skip = dense(2, dims);
  const std::vector<float> bias = dense(3, normalized);
  const T* x = static_cast<const T*>(in.data);
  T* y = static_cast<T*>(args.outputs[0].data);
  T* sum_out = args.n_outputs > 1 ? static_cast<T*>(args.outputs[1].data) : nullptr;
  std::vector<float> row(static_cast<size_t>(size));
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * size;
    double squares = 0.0;
    for (int64_t i = 0; i < size; ++i) {
      float v = load(x, base + i);
      if (!skip.empty()) v += skip[base + i];
      if (!bias.empty()) v += bias[i];
      row[i] = v;
      squares += static_cast<double>(v) * v;
      if (sum_out != nullptr) store(sum_out, base + i, v);
    }
    const auto inv_rms = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(size) + epsilon));
    for (int64_t i = 0; i < size; ++i) store(y, base + i, row[i] * inv_rms * scale[i]);
  }
}

// ---------------------------------------------------------------- rotary

// Rotates the first rotary_dim values of one head vector in place: pairs
// (i, i + rotary_dim/2), or (2i, 2i+1) when interleaved.
inline void rotate(float* v, const float* cos, const float* sin, int64_t rotary_dim, bool interleaved) {
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = interleaved ? 2 * i : i;
    const int64_t i2 = interleaved ? 2 * i + 1 : i + half;
    const float x1 = v[i1], x2 = v[i2];
    v[i1] = x1 * cos[i] - x2 * sin[i];
    v[i2] = x2 * cos[i] + x1 * sin[i];
  }
}

// A [max_position, rotary_dim / 2] cos/sin cache in float, with its bound.
struct RotaryCache {
  std::vector<float> cos, sin;
  int64_t positions = 0, width = 0;

  template <typename T>
  static RotaryCache read(const hipdnn_ep_tensor_ref_t& c, const hipdnn_ep_tensor_ref_t& s) {
    return RotaryCache{to_float_vector<T>(c), to_float_vector<T>(s), c.dims[0], c.dims[1]};
  }

  void apply(float* v, int64_t position, int64_t rotary_dim, bool interleaved) const {
    if (position < 0 || position >= positions) {
      fail_invalid("position " + std::to_string(position) + " is outside the rotary cache's " +
                   std::to_string(positions) + " positions");
    }
    rotate(v, cos.data() + position * width, sin.data() + position * width, rotary_dim, interleaved);
  }
};

template <typename T>
void rotary_typed(const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims x = dims_of(in);
  const bool interleaved = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_INTERLEAVED] != 0;
  const int64_t num_heads_attr = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_NUM_HEADS];
  const RotaryCache cache = RotaryCache::read<T>(args.inputs[2], args.inputs[3]);
  int64_t rotary_dim = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_ROTARY_EMBEDDING_DIM];
  if (rotary_dim == 0) rotary_dim = 2 * cache.width;
  const bool bnsh = x.size() == 4;
  const int64_t batch = x[0];
  const int64_t seq = bnsh ? x[2] : x[1];
  const int64_t head_size = bnsh ? x[3] : (num_heads_attr > 0 ? x[2] / num_heads_attr : rotary_dim);
  const int64_t heads = bnsh ? x[1] : x[2] / head_size;
  const auto* pos = static_cast<const int64_t*>(args.inputs[1].data);
  const bool offset_only = element_count(args.inputs[1]) == 1 && !(batch == 1 && seq == 1 && args.inputs[1].rank == 2);
  const T* src = static_cast<const T*>(in.data);
  T* dst = static_cast<T*>(args.outputs[0].data);
  std::vector<float> v(static_cast<size_t>(head_size));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t position = offset_only ? pos[0] + s : pos[b * seq + s];
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = bnsh ? ((b * heads + h) * seq + s) * head_size : ((b * seq + s) * heads + h) * head_size;
        for (int64_t i = 0; i < head_size; ++i) v[i] = load(src, base + i);
        cache.apply(v.data(), position, rotary_dim, interleaved);
        for (int64_t i = 0; i < head_size; ++i) store(dst, base + i, v[i]);
      }
    }
  }
}

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

void matmul_nbits(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const int64_t k = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_K];
  const int64_t n = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_N];
  const int64_t block = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_BLOCK_SIZE];
  if (element_count(args.outputs[0]) == 0) return;
  dispatch_float(args.inputs[0].dtype, "matmul_nbits", [&](auto tag) {
    matmul_nbits_typed<typename decltype(tag)::type>(args, k, n, block);
  });
}

void rms_norm(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_RMS_NORM_INT_ATTR_AXIS]);
  const auto epsilon = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_RMS_NORM_FLOAT_ATTR_EPSILON]);
  if (element_count(args.inputs[0]) == 0) return;
  dispatch_float(args.inputs[0].dtype, "rms_norm", [&](auto tag) {
    rms_norm_typed<typename decltype(tag)::type>(args, axis, epsilon);
  });
}

void rotary_embedding(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  if (element_count(args.inputs[0]) == 0) return;
  dispatch_float(args.inputs[0].dtype, "rotary_embedding", [&](auto tag) {
    rotary_typed<typename decltype(tag)::type>(args);
  });
}

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
