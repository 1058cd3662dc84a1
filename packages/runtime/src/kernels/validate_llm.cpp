// Argument checks of the LLM kernels (matmul_nbits, rms_norm, skip_layer_norm, rotary_embedding,
// group_query_attention, attention); see validate.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/attention_layout.h"
#include "kernels/nbits_dims.h"
#include "kernels/validate_util.h"

namespace hipdnn_ep::kernels {

using namespace validation;

namespace {

// Element count of a tensor, as the number of values it must hold.
void expect_count(const hipdnn_ep_tensor_ref_t& t, const std::string& name, int64_t count) {
  if (element_count(t) != count) {
    fail_invalid(name + " has " + std::to_string(element_count(t)) + " elements " + format_dims(dims_of(t)) +
                 ", expected " + std::to_string(count));
  }
}

}  // namespace

namespace {

// K, N, bits and block_size of matmul_nbits or its gated form (both list them in this order), checked
// against A (input 0), whose dtype must be in `dtypes`; then the call's shape as the kernels read it.
NbitsDims nbits_shape(const Call& call, const char* what, dt::Mask dtypes) {
  require_dtype(dtypes, what, call.in(0).dtype);
  const int64_t k = call.int_attr(HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_K);
  const int64_t n = call.int_attr(HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_N);
  const int64_t bits = call.int_attr(HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_BITS);
  const int64_t block = call.int_attr(HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_BLOCK_SIZE);
  if (bits != 4) fail(HIPDNN_EP_STATUS_UNSUPPORTED, "bits " + std::to_string(bits) + " is not supported (only 4)");
  if (block < 16 || (block & (block - 1)) != 0) {
    fail_invalid("block_size " + std::to_string(block) + " must be a power of two >= 16");
  }
  if (k <= 0 || n <= 0) fail_invalid("K " + std::to_string(k) + " and N " + std::to_string(n) + " must be positive");
  const Dims a = dims_of(call.in(0));
  if (a.empty() || a.back() != k) fail_invalid("A dims " + format_dims(a) + " must end with K = " + std::to_string(k));
  return nbits_dims(call.args());
}

// One quantized weight: B at input `at`, its scales at at + 1 and its optional zero points at at + 2
// (`of`: which weight, for the messages).
void expect_nbits_weight(const Call& call, const NbitsDims& s, int32_t at, const std::string& of) {
  const auto name = [&](int32_t i, const char* what) { return "input " + std::to_string(i) + " (" + what + of + ")"; };
  if (!call.has_input(at) || !call.has_input(at + 1)) fail_invalid(name(at, "B") + " and its scales are required");
  int64_t b_bytes = 0;
  if (__builtin_mul_overflow(s.n, s.blocks * (s.block / 2), &b_bytes)) fail_invalid("N * K overflows");
  require_input_dtype(call.in(at), name(at, "B"), dt::matmul_nbits_input_1);
  expect_count(call.in(at), name(at, "B"), b_bytes);
  call.expect_dtype(call.in(at + 1), name(at + 1, "scales"), call.in(0).dtype);
  expect_count(call.in(at + 1), name(at + 1, "scales"), s.n * s.blocks);
  if (call.has_input(at + 2)) {
    require_input_dtype(call.in(at + 2), name(at + 2, "zero points"), dt::matmul_nbits_input_3);
    expect_count(call.in(at + 2), name(at + 2, "zero points"), s.n * ((s.blocks + 1) / 2));
  }
}

// Y: A's dims with N last, A's dtype.
void expect_nbits_out(const Call& call, const NbitsDims& s) {
  Dims out = dims_of(call.in(0));
  out.back() = s.n;
  call.expect_out(call.in(0).dtype, out);
}

}  // namespace

void validate_matmul_nbits(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_MATMUL_NBITS_N_INT_ATTRS, HIPDNN_EP_KERNEL_MATMUL_NBITS_N_FLOAT_ATTRS, 3, 5, 1, 3);
  const NbitsDims s = nbits_shape(call, "matmul_nbits", dt::matmul_nbits);
  expect_nbits_weight(call, s, 1, "");
  if (call.has_input(4)) {
    call.expect_dtype(call.in(4), "input 4 (bias)", call.in(0).dtype);
    expect_count(call.in(4), "input 4 (bias)", s.n);
  }
  expect_nbits_out(call, s);
}

void validate_matmul_nbits_silu_mul(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_MATMUL_NBITS_SILU_MUL_N_INT_ATTRS,
                  HIPDNN_EP_KERNEL_MATMUL_NBITS_SILU_MUL_N_FLOAT_ATTRS, 6, 7, 1, 3);
  const NbitsDims s = nbits_shape(call, "matmul_nbits_silu_mul", dt::matmul_nbits_silu_mul);
  expect_nbits_weight(call, s, 1, " of the gate");
  expect_nbits_weight(call, s, 4, " of up");
  expect_nbits_out(call, s);
}

namespace {

// rms_norm and skip_layer_norm: X, Scale and the optional inputs named in `names` (from index 2 on),
// Skip (at skip_at) broadcast to X and the others to the normalized dims; Y and an optional sum like X.
void validate_norm(const hipdnn_ep_kernel_args_t* args, int32_t n_int_attrs, int32_t n_float_attrs, dt::Mask dtypes,
                   const char* what, int32_t axis_attr_index, int32_t epsilon_attr_index,
                   const std::vector<const char*>& names, int32_t skip_at) {
  const int32_t n_outputs = args != nullptr && args->n_outputs == 2 ? 2 : 1;
  const auto max_inputs = static_cast<int32_t>(names.size());
  const Call call(args, n_int_attrs, n_float_attrs, 2, max_inputs, n_outputs, 2);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dtypes, what, dtype);
  const Dims x = dims_of(call.in(0));
  const int64_t axis = axis_attr(call, axis_attr_index, x.size());
  const double epsilon = call.float_attr(epsilon_attr_index);
  if (!(epsilon >= 0.0) || std::isinf(epsilon)) fail_invalid("epsilon " + std::to_string(epsilon) + " must be finite and >= 0");
  const Dims normalized(x.begin() + axis, x.end());
  for (int32_t i = 1; i < max_inputs; ++i) {
    if (!call.has_input(i)) continue;  // Scale (input 1) is required by Call
    call.expect_dtype(call.in(i), input_name(i), dtype);
    const Dims& target = i == skip_at ? x : normalized;
    if (!broadcasts_to(dims_of(call.in(i)), target)) {
      fail_invalid(std::string(names[static_cast<size_t>(i)]) + " dims " + format_dims(dims_of(call.in(i))) +
                   " do not broadcast to " + format_dims(target));
    }
  }
  call.expect_out(dtype, x);
  if (n_outputs == 2) {
    call.expect_dtype(call.out(1), output_name(1), dtype);
    expect_dims(call.out(1), output_name(1) + " (the sum)", x);
  }
}

}  // namespace

void validate_rms_norm(const hipdnn_ep_kernel_args_t* args) {
  validate_norm(args, HIPDNN_EP_KERNEL_RMS_NORM_N_INT_ATTRS, HIPDNN_EP_KERNEL_RMS_NORM_N_FLOAT_ATTRS, dt::rms_norm,
                "rms_norm", HIPDNN_EP_KERNEL_RMS_NORM_INT_ATTR_AXIS, HIPDNN_EP_KERNEL_RMS_NORM_FLOAT_ATTR_EPSILON,
                {"X", "Scale", "Skip", "Bias"}, 2);
}

void validate_skip_layer_norm(const hipdnn_ep_kernel_args_t* args) {
  validate_norm(args, HIPDNN_EP_KERNEL_SKIP_LAYER_NORM_N_INT_ATTRS, HIPDNN_EP_KERNEL_SKIP_LAYER_NORM_N_FLOAT_ATTRS,
                dt::skip_layer_norm, "skip_layer_norm", HIPDNN_EP_KERNEL_SKIP_LAYER_NORM_INT_ATTR_AXIS,
                HIPDNN_EP_KERNEL_SKIP_LAYER_NORM_FLOAT_ATTR_EPSILON, {"X", "Scale", "B", "Skip", "Bias"}, 3);
}

void validate_rotary_embedding(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_N_INT_ATTRS, HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_N_FLOAT_ATTRS,
                  4, 4, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::rotary_embedding, "rotary_embedding", dtype);
  const Dims x = dims_of(call.in(0));
  if (x.size() != 3 && x.size() != 4) fail_invalid("X dims " + format_dims(x) + " must have rank 3 or 4");
  for (int32_t i = 2; i < 4; ++i) {
    call.expect_dtype(call.in(i), input_name(i), dtype);
    if (call.in(i).rank != 2) fail_invalid(input_name(i) + " (cos/sin cache) must have rank 2");
  }
  const Dims cache = dims_of(call.in(2));
  expect_dims(call.in(3), "input 3 (sin_cache)", cache);
  const int64_t num_heads = call.int_attr(HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_NUM_HEADS);
  int64_t rotary_dim = call.int_attr(HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_ROTARY_EMBEDDING_DIM);
  if (rotary_dim == 0) rotary_dim = 2 * cache[1];
  if (rotary_dim <= 0 || rotary_dim % 2 != 0 || rotary_dim / 2 > cache[1]) {
    fail_invalid("rotary_embedding_dim " + std::to_string(rotary_dim) + " must be even, positive and at most twice "
                 "the cache's dim 1 (" + std::to_string(cache[1]) + ")");
  }
  int64_t head_size = 0;
  if (x.size() == 4) {
    head_size = x[3];
  } else {
    if (num_heads < 0) fail_invalid("num_heads " + std::to_string(num_heads) + " must not be negative");
    head_size = num_heads > 0 ? x[2] / num_heads : rotary_dim;
    if (head_size <= 0 || x[2] % head_size != 0) {
      fail_invalid("hidden size " + std::to_string(x[2]) + " is not a multiple of the head size " + std::to_string(head_size));
    }
  }
  if (rotary_dim > head_size) {
    fail_invalid("rotary_embedding_dim " + std::to_string(rotary_dim) + " exceeds the head size " + std::to_string(head_size));
  }
  require_input_dtype(call.in(1), "input 1 (position_ids)", dt::rotary_embedding_input_1);
  const Dims pos = dims_of(call.in(1));
  const int64_t batch = x[0];
  const int64_t seq = x.size() == 4 ? x[2] : x[1];
  if (pos != Dims{batch, seq} && element_count(pos) != 1) {
    fail_invalid("position_ids dims " + format_dims(pos) + " must be [batch, seq] = " + format_dims({batch, seq}) +
                 " or one offset");
  }
  call.expect_out(dtype, x);
}

void validate_group_query_attention(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_N_INT_ATTRS,
                  HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_N_FLOAT_ATTRS, 7, 9, 3, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::group_query_attention, "group_query_attention", dtype);
  const int64_t heads = call.int_attr(HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_NUM_HEADS);
  const int64_t kv_heads = call.int_attr(HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_KV_NUM_HEADS);
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0) {
    fail_invalid("num_heads " + std::to_string(heads) + " must be a positive multiple of kv_num_heads " +
                 std::to_string(kv_heads));
  }
  const double scale = call.float_attr(HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_FLOAT_ATTR_SCALE);
  const double softcap = call.float_attr(HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_FLOAT_ATTR_SOFTCAP);
  if (!std::isfinite(scale) || !std::isfinite(softcap) || softcap < 0.0) {
    fail_invalid("scale must be finite and softcap finite and >= 0");
  }
  const Dims q = dims_of(call.in(0));
  if (q.size() != 3) fail_invalid("query dims " + format_dims(q) + " must have rank 3");
  const int64_t batch = q[0], seq = q[1];
  const bool packed = !call.has_input(1);
  if (packed == call.has_input(2)) fail_invalid("key and value must be both present or both absent (packed QKV)");
  // Heads per token: num_heads, plus 2 * kv_num_heads when Q, K and V are packed; each has >= 1 value,
  // so more heads than the query's last dim is refused before anything multiplies them.
  int64_t per_token = heads;
  if (packed && (__builtin_mul_overflow(kv_heads, 2, &per_token) || __builtin_add_overflow(per_token, heads, &per_token))) {
    per_token = std::numeric_limits<int64_t>::max();
  }
  const std::string heads_text = packed ? "num_heads + 2 * kv_num_heads" : "num_heads";
  if (per_token > q[2]) {
    fail_invalid("query's last dim " + std::to_string(q[2]) + " is smaller than " + heads_text + " (" +
                 std::to_string(heads) + (packed ? " + 2 * " + std::to_string(kv_heads) : "") +
                 "): each head needs at least one value");
  }
  const int64_t head_size = q[2] / per_token;
  if (q[2] % per_token != 0) {
    fail_invalid("query's last dim " + std::to_string(q[2]) + " is not a multiple of " + heads_text + " = " +
                 std::to_string(per_token));
  }
  if (seq == 0 && batch > 0) {
    fail_invalid("query has dims " + format_dims(q) + ": the sequence length is 0, but GroupQueryAttention needs at "
                 "least one new token per call (present_key/present_value would be left unwritten)");
  }
  const Dims kv_in{batch, seq, kv_heads * head_size};
  for (int32_t i = 1; i < 3 && !packed; ++i) {
    call.expect_dtype(call.in(i), input_name(i), dtype);
    expect_dims(call.in(i), i == 1 ? "key" : "value", kv_in);
  }
  int64_t past = 0;
  if (call.has_input(3) != call.has_input(4)) fail_invalid("past_key and past_value must be both present or both absent");
  if (call.has_input(3)) {
    const Dims pk = dims_of(call.in(3));
    if (pk.size() != 4 || pk[0] != batch || pk[1] != kv_heads || pk[3] != head_size) {
      fail_invalid("past_key dims " + format_dims(pk) + " must be [batch, kv_num_heads, past, head_size] = [" +
                   std::to_string(batch) + ", " + std::to_string(kv_heads) + ", past, " + std::to_string(head_size) + "]");
    }
    past = pk[2];
    for (int32_t i = 3; i < 5; ++i) call.expect_dtype(call.in(i), input_name(i), dtype);
    expect_dims(call.in(4), "past_value", pk);
  }
  for (int32_t i = 5; i < 7; ++i) {
    if (!call.has_input(i)) fail_invalid(std::string(i == 5 ? "seqlens_k" : "total_sequence_length") + " is required");
  }
  require_input_dtype(call.in(5), "input 5 (seqlens_k)", dt::group_query_attention_input_5);
  expect_count(call.in(5), "input 5 (seqlens_k)", batch);
  require_input_dtype(call.in(6), "input 6 (total_sequence_length)", dt::group_query_attention_input_6);
  expect_count(call.in(6), "input 6 (total_sequence_length)", 1);
  const bool rotary = call.int_attr(HIPDNN_EP_KERNEL_GROUP_QUERY_ATTENTION_INT_ATTR_DO_ROTARY) != 0;
  if (rotary) {
    if (!call.has_input(7) || !call.has_input(8)) fail_invalid("do_rotary needs cos_cache and sin_cache (inputs 7, 8)");
    for (int32_t i = 7; i < 9; ++i) {
      call.expect_dtype(call.in(i), input_name(i), dtype);
      const Dims c = dims_of(call.in(i));
      if (c.size() != 2 || c[1] * 2 > head_size || c[1] <= 0) {
        fail_invalid(input_name(i) + " dims " + format_dims(c) + " must be [max_position, rotary_dim / 2] with "
                     "rotary_dim <= head_size " + std::to_string(head_size));
      }
    }
    expect_dims(call.in(8), "sin_cache", dims_of(call.in(7)));
  }
  call.expect_out(dtype, Dims{batch, seq, heads * head_size});
  const Dims pk_out = dims_of(call.out(1));
  if (pk_out.size() != 4 || pk_out[0] != batch || pk_out[1] != kv_heads || pk_out[3] != head_size ||
      pk_out[2] < std::max(past, seq)) {
    fail_invalid("present_key dims " + format_dims(pk_out) + " must be [" + std::to_string(batch) + ", " +
                 std::to_string(kv_heads) + ", present >= max(past, seq), " + std::to_string(head_size) + "]");
  }
  for (int32_t i = 1; i < 3; ++i) call.expect_dtype(call.out(i), output_name(i), dtype);
  expect_dims(call.out(2), "present_value", pk_out);
}

void validate_attention(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_ATTENTION_N_INT_ATTRS, HIPDNN_EP_KERNEL_ATTENTION_N_FLOAT_ATTRS, 3, 4, 1, 3);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::attention, "attention", dtype);
  call.expect_dtype(call.in(1), "K", dtype);
  call.expect_dtype(call.in(2), "V", dtype);
  call.expect_dtype(call.out(0), "Y", dtype);
  if (call.has_input(3)) require_input_dtype(call.in(3), "attn_mask", dt::attention_input_3);
  attention_layout(*args);
}

}  // namespace hipdnn_ep::kernels
