// Shape rules of hipdnn_ep_kernel_attention (see attention_layout.h and the manifest's doc).
#include "kernels/attention_layout.h"

#include <cmath>
#include <string>

#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels {
namespace {

constexpr int32_t kQ = 0, kK = 1, kV = 2, kMask = 3;

std::string text(int64_t v) { return std::to_string(v); }

// total / parts, which must be exact and give at least one value per part.
int64_t per_head(int64_t total, int64_t parts, const char* tensor, const char* heads_attr) {
  if (total % parts != 0 || total / parts == 0) {
    fail_invalid(std::string(tensor) + "'s last dim " + text(total) + " is not a positive multiple of " + heads_attr +
                 " " + text(parts));
  }
  return total / parts;
}

void check_groups(const AttentionLayout& l) {
  if (l.q_heads % l.kv_heads != 0) {
    fail_invalid("the query heads " + text(l.q_heads) + " must be a multiple of the key/value heads " +
                 text(l.kv_heads));
  }
}

}  // namespace

AttentionLayout attention_layout(const hipdnn_ep_kernel_args_t& args) {
  const Dims q = dims_of(args.inputs[kQ]), k = dims_of(args.inputs[kK]), v = dims_of(args.inputs[kV]);
  const size_t rank = q.size();
  if ((rank != 3 && rank != 4) || k.size() != rank || v.size() != rank) {
    fail_invalid("Q, K and V have dims " + format_dims(q) + ", " + format_dims(k) + ", " + format_dims(v) +
                 "; they must all have rank 3 ([batch, seq, heads * head_size]) or all rank 4 ([batch, heads, seq, "
                 "head_size])");
  }
  const int64_t* ia = args.int_attrs;
  const int64_t q_heads_attr = ia[HIPDNN_EP_KERNEL_ATTENTION_INT_ATTR_Q_NUM_HEADS];
  const int64_t kv_heads_attr = ia[HIPDNN_EP_KERNEL_ATTENTION_INT_ATTR_KV_NUM_HEADS];
  const int64_t causal = ia[HIPDNN_EP_KERNEL_ATTENTION_INT_ATTR_IS_CAUSAL];
  if (causal != 0 && causal != 1) fail_invalid("is_causal " + text(causal) + " must be 0 or 1");
  AttentionLayout l{};
  l.batch = q[0];
  if (k[0] != l.batch || v[0] != l.batch) {
    fail_invalid("Q, K and V have batch " + text(q[0]) + ", " + text(k[0]) + ", " + text(v[0]) + "; they must agree");
  }
  if (rank == 3) {
    if (q_heads_attr <= 0 || kv_heads_attr <= 0) {
      fail_invalid("q_num_heads " + text(q_heads_attr) + " and kv_num_heads " + text(kv_heads_attr) +
                   " must be positive for rank 3 inputs");
    }
    l.q_heads = q_heads_attr;
    l.kv_heads = kv_heads_attr;
    l.q_seq = q[1];
    l.kv_seq = k[1];
    l.head_size = per_head(q[2], l.q_heads, "Q", "q_num_heads");
    check_groups(l);  // kv_heads <= q_heads <= Q's last dim: the products below do not overflow
    if (k[2] != l.kv_heads * l.head_size) {
      fail_invalid("K's last dim " + text(k[2]) + " must be kv_num_heads * head_size = " + text(l.kv_heads) + " * " +
                   text(l.head_size));
    }
    l.v_head_size = per_head(v[2], l.kv_heads, "V", "kv_num_heads");
    if (v[1] != l.kv_seq) fail_invalid("V has " + text(v[1]) + " keys, K " + text(l.kv_seq) + "; they must agree");
    l.q = {l.q_seq * q[2], l.head_size, q[2]};
    l.k = {l.kv_seq * k[2], l.head_size, k[2]};
    l.v = {l.kv_seq * v[2], l.v_head_size, v[2]};
    int64_t y_width = 0;
    if (__builtin_mul_overflow(l.q_heads, l.v_head_size, &y_width)) fail_invalid("q_num_heads * v_head_size overflows");
    l.y = {l.q_seq * y_width, l.v_head_size, y_width};
  } else {
    if (q_heads_attr != 0 || kv_heads_attr != 0) {
      fail_invalid("q_num_heads and kv_num_heads must be 0 for rank 4 inputs (the heads are dim 1)");
    }
    l.q_heads = q[1];
    l.kv_heads = k[1];
    l.q_seq = q[2];
    l.kv_seq = k[2];
    l.head_size = q[3];
    l.v_head_size = v[3];
    if (l.kv_heads <= 0 || v[1] != l.kv_heads || v[2] != l.kv_seq || k[3] != l.head_size) {
      fail_invalid("K " + format_dims(k) + " and V " + format_dims(v) + " must be [batch, kv_heads, kv_seq, " +
                   text(l.head_size) + "] and [batch, kv_heads, kv_seq, v_head_size] with kv_heads > 0");
    }
    if (l.head_size <= 0 || l.v_head_size <= 0) {
      fail_invalid("the head sizes " + text(l.head_size) + " and " + text(l.v_head_size) + " must be positive");
    }
    l.q = {l.q_heads * l.q_seq * l.head_size, l.q_seq * l.head_size, l.head_size};
    l.k = {l.kv_heads * l.kv_seq * l.head_size, l.kv_seq * l.head_size, l.head_size};
    l.v = {l.kv_heads * l.kv_seq * l.v_head_size, l.kv_seq * l.v_head_size, l.v_head_size};
    l.y = {l.q_heads * l.q_seq * l.v_head_size, l.q_seq * l.v_head_size, l.v_head_size};
  }
  check_groups(l);
  const Dims y = dims_of(args.outputs[0]);
  const Dims want = rank == 3 ? Dims{l.batch, l.q_seq, l.q_heads * l.v_head_size}
                              : Dims{l.batch, l.q_heads, l.q_seq, l.v_head_size};
  if (y != want) fail_invalid("output 0 has dims " + format_dims(y) + ", expected " + format_dims(want));

  l.has_mask = args.n_inputs > kMask && is_present(args.inputs[kMask]);
  if (l.has_mask) {
    const Dims m = dims_of(args.inputs[kMask]);
    const Dims full{l.batch, l.q_heads, l.q_seq, l.kv_seq};
    if (m.size() > 4 || !broadcasts_to(m, full)) {
      fail_invalid("attn_mask dims " + format_dims(m) + " do not broadcast to [batch, q_heads, q_seq, kv_seq] = " +
                   format_dims(full));
    }
    const Dims strides = broadcast_strides(m, full);
    for (int i = 0; i < 4; ++i) l.mask[i] = strides[static_cast<size_t>(i)];
    l.mask_dtype = args.inputs[kMask].dtype;
  }
  l.causal = causal != 0;
  const double scale = args.float_attrs[HIPDNN_EP_KERNEL_ATTENTION_FLOAT_ATTR_SCALE];
  const double softcap = args.float_attrs[HIPDNN_EP_KERNEL_ATTENTION_FLOAT_ATTR_SOFTCAP];
  if (!std::isfinite(scale) || !std::isfinite(softcap) || softcap < 0.0) {
    fail_invalid("scale must be finite and softcap finite and >= 0");
  }
  l.scale = scale == 0.0 ? 1.0f / std::sqrt(static_cast<float>(l.head_size)) : static_cast<float>(scale);
  l.softcap = static_cast<float>(softcap);
  return l;
}

}  // namespace hipdnn_ep::kernels
