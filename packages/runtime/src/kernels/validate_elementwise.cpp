// Argument checks of the elementwise, matmul, normalization and reduce kernels
// (binary, unary, cast, where, matmul, gemm, softmax, layer_norm, reduce); see validate.h.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/validate_util.h"

namespace hipdnn_ep::kernels {

using namespace validation;

namespace {

std::string binary_op_name(int64_t op) {
  switch (op) {
    case HIPDNN_EP_BINARY_OP_ADD: return "ADD";
    case HIPDNN_EP_BINARY_OP_SUB: return "SUB";
    case HIPDNN_EP_BINARY_OP_MUL: return "MUL";
    case HIPDNN_EP_BINARY_OP_DIV: return "DIV";
    case HIPDNN_EP_BINARY_OP_POW: return "POW";
    case HIPDNN_EP_BINARY_OP_EQUAL: return "EQUAL";
    case HIPDNN_EP_BINARY_OP_LESS: return "LESS";
    case HIPDNN_EP_BINARY_OP_GREATER: return "GREATER";
    case HIPDNN_EP_BINARY_OP_GREATER_OR_EQUAL: return "GREATER_OR_EQUAL";
    case HIPDNN_EP_BINARY_OP_LESS_OR_EQUAL: return "LESS_OR_EQUAL";
    case HIPDNN_EP_BINARY_OP_AND: return "AND";
    case HIPDNN_EP_BINARY_OP_OR: return "OR";
    case HIPDNN_EP_BINARY_OP_XOR: return "XOR";
    case HIPDNN_EP_BINARY_OP_MIN: return "MIN";
    case HIPDNN_EP_BINARY_OP_MAX: return "MAX";
    case HIPDNN_EP_BINARY_OP_MOD: return "MOD";
    case HIPDNN_EP_BINARY_OP_FMOD: return "FMOD";
    case HIPDNN_EP_BINARY_OP_BITWISE_AND: return "BITWISE_AND";
    case HIPDNN_EP_BINARY_OP_BITWISE_OR: return "BITWISE_OR";
    case HIPDNN_EP_BINARY_OP_BITWISE_XOR: return "BITWISE_XOR";
    case HIPDNN_EP_BINARY_OP_SHIFT_LEFT: return "SHIFT_LEFT";
    case HIPDNN_EP_BINARY_OP_SHIFT_RIGHT: return "SHIFT_RIGHT";
    case HIPDNN_EP_BINARY_OP_SILU_MUL: return "SILU_MUL";
    default: return std::to_string(op);
  }
}

std::string unary_op_name(int64_t op) {
  switch (op) {
    case HIPDNN_EP_UNARY_OP_RELU: return "RELU";
    case HIPDNN_EP_UNARY_OP_SIGMOID: return "SIGMOID";
    case HIPDNN_EP_UNARY_OP_TANH: return "TANH";
    case HIPDNN_EP_UNARY_OP_EXP: return "EXP";
    case HIPDNN_EP_UNARY_OP_LOG: return "LOG";
    case HIPDNN_EP_UNARY_OP_SQRT: return "SQRT";
    case HIPDNN_EP_UNARY_OP_NEG: return "NEG";
    case HIPDNN_EP_UNARY_OP_ERF: return "ERF";
    case HIPDNN_EP_UNARY_OP_GELU_ERF: return "GELU_ERF";
    case HIPDNN_EP_UNARY_OP_GELU_TANH: return "GELU_TANH";
    case HIPDNN_EP_UNARY_OP_ABS: return "ABS";
    case HIPDNN_EP_UNARY_OP_FLOOR: return "FLOOR";
    case HIPDNN_EP_UNARY_OP_CEIL: return "CEIL";
    case HIPDNN_EP_UNARY_OP_NOT: return "NOT";
    case HIPDNN_EP_UNARY_OP_IS_NAN: return "IS_NAN";
    case HIPDNN_EP_UNARY_OP_SIGN: return "SIGN";
    case HIPDNN_EP_UNARY_OP_RECIPROCAL: return "RECIPROCAL";
    case HIPDNN_EP_UNARY_OP_SIN: return "SIN";
    case HIPDNN_EP_UNARY_OP_COS: return "COS";
    case HIPDNN_EP_UNARY_OP_TAN: return "TAN";
    case HIPDNN_EP_UNARY_OP_ASIN: return "ASIN";
    case HIPDNN_EP_UNARY_OP_ACOS: return "ACOS";
    case HIPDNN_EP_UNARY_OP_ATAN: return "ATAN";
    case HIPDNN_EP_UNARY_OP_SINH: return "SINH";
    case HIPDNN_EP_UNARY_OP_COSH: return "COSH";
    case HIPDNN_EP_UNARY_OP_ASINH: return "ASINH";
    case HIPDNN_EP_UNARY_OP_ACOSH: return "ACOSH";
    case HIPDNN_EP_UNARY_OP_ATANH: return "ATANH";
    case HIPDNN_EP_UNARY_OP_ROUND: return "ROUND";
    case HIPDNN_EP_UNARY_OP_SOFTSIGN: return "SOFTSIGN";
    case HIPDNN_EP_UNARY_OP_BITWISE_NOT: return "BITWISE_NOT";
    default: return std::to_string(op);
  }
}

std::string reduce_op_name(int64_t op) {
  switch (op) {
    case HIPDNN_EP_REDUCE_OP_SUM: return "SUM";
    case HIPDNN_EP_REDUCE_OP_MEAN: return "MEAN";
    case HIPDNN_EP_REDUCE_OP_MAX: return "MAX";
    case HIPDNN_EP_REDUCE_OP_MIN: return "MIN";
    case HIPDNN_EP_REDUCE_OP_PROD: return "PROD";
    case HIPDNN_EP_REDUCE_OP_L1: return "L1";
    case HIPDNN_EP_REDUCE_OP_L2: return "L2";
    case HIPDNN_EP_REDUCE_OP_LOG_SUM: return "LOG_SUM";
    case HIPDNN_EP_REDUCE_OP_LOG_SUM_EXP: return "LOG_SUM_EXP";
    case HIPDNN_EP_REDUCE_OP_SUM_SQUARE: return "SUM_SQUARE";
    default: return std::to_string(op);
  }
}

}  // namespace

void validate_binary(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_BINARY_N_INT_ATTRS, HIPDNN_EP_KERNEL_BINARY_N_FLOAT_ATTRS, 2, 2, 1);
  const int64_t op = call.int_attr(HIPDNN_EP_KERNEL_BINARY_INT_ATTR_OP);
  if (op < HIPDNN_EP_BINARY_OP_ADD || op > HIPDNN_EP_BINARY_OP_SILU_MUL) {
    fail_invalid("unknown binary op " + std::to_string(op));
  }
  const int32_t dtype = call.in(0).dtype;
  if (call.in(1).dtype != dtype) {
    fail_invalid("inputs have different dtypes " + dtype_name(dtype) + " and " + dtype_name(call.in(1).dtype));
  }
  const bool compare = binary_op_writes_bool(op);
  require_dtype(dt::binary(op), "binary op " + binary_op_name(op), dtype);
  Dims out;
  if (!broadcast_shapes(dims_of(call.in(0)), dims_of(call.in(1)), &out)) {
    fail_invalid("input dims " + format_dims(dims_of(call.in(0))) + " and " + format_dims(dims_of(call.in(1))) +
                 " do not broadcast");
  }
  call.expect_out(compare ? HIPDNN_EP_DTYPE_BOOL : dtype, out);
}

void validate_unary(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_UNARY_N_INT_ATTRS, HIPDNN_EP_KERNEL_UNARY_N_FLOAT_ATTRS, 1, 1, 1);
  const int64_t op = call.int_attr(HIPDNN_EP_KERNEL_UNARY_INT_ATTR_OP);
  if (op < HIPDNN_EP_UNARY_OP_RELU || op > HIPDNN_EP_UNARY_OP_BITWISE_NOT) {
    fail_invalid("unknown unary op " + std::to_string(op));
  }
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::unary(op), "unary op " + unary_op_name(op), dtype);
  call.expect_out(op == HIPDNN_EP_UNARY_OP_IS_NAN ? HIPDNN_EP_DTYPE_BOOL : dtype, dims_of(call.in(0)));
}

void validate_cast(const hipdnn_ep_kernel_args_t* args) {
  // saturate joined in ABI 1.3: artifacts of 1.1 and 1.2 pass no int attributes (saturate 1).
  const int32_t n_ints = args != nullptr && args->n_int_attrs == 0 ? 0 : HIPDNN_EP_KERNEL_CAST_N_INT_ATTRS;
  const Call call(args, n_ints, HIPDNN_EP_KERNEL_CAST_N_FLOAT_ATTRS, 1, 1, 1);
  if (n_ints > 0) {
    const int64_t saturate = call.int_attr(HIPDNN_EP_KERNEL_CAST_INT_ATTR_SATURATE);
    if (saturate != 0 && saturate != 1) fail_invalid("saturate must be 0 or 1, got " + std::to_string(saturate));
  }
  // Every ABI dtype converts to every other; check_tensor vetted both codes.
  require_dtype(dt::cast, "cast", call.in(0).dtype);
  call.expect_out(call.out(0).dtype, dims_of(call.in(0)));
}

void validate_where(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_WHERE_N_INT_ATTRS, HIPDNN_EP_KERNEL_WHERE_N_FLOAT_ATTRS, 3, 3, 1);
  require_input_dtype(call.in(0), "input 0 (cond)", dt::where);
  call.expect_dtype(call.in(2), input_name(2), call.in(1).dtype);
  Dims xy;
  Dims out;
  if (!broadcast_shapes(dims_of(call.in(1)), dims_of(call.in(2)), &xy) ||
      !broadcast_shapes(dims_of(call.in(0)), xy, &out)) {
    fail_invalid("input dims " + format_dims(dims_of(call.in(0))) + ", " + format_dims(dims_of(call.in(1))) + " and " +
                 format_dims(dims_of(call.in(2))) + " do not broadcast");
  }
  call.expect_out(call.in(1).dtype, out);
}

MatmulShape matmul_shape(const Dims& a, const Dims& b) {
  if (a.empty() || b.empty()) fail_invalid("MatMul operands must have rank >= 1");
  MatmulShape s;
  const bool a_vector = a.size() == 1;
  const bool b_vector = b.size() == 1;
  s.m = a_vector ? 1 : a[a.size() - 2];
  s.k = a.back();
  const int64_t kb = b_vector ? b[0] : b[b.size() - 2];
  s.n = b_vector ? 1 : b.back();
  if (s.k != kb) {
    fail_invalid("inner dims differ: A " + format_dims(a) + " has K = " + std::to_string(s.k) + ", B " + format_dims(b) +
                 " has K = " + std::to_string(kb));
  }
  s.a_batch = a_vector ? Dims{} : Dims(a.begin(), a.end() - 2);
  s.b_batch = b_vector ? Dims{} : Dims(b.begin(), b.end() - 2);
  if (!broadcast_shapes(s.a_batch, s.b_batch, &s.batch)) {
    fail_invalid("batch dims " + format_dims(s.a_batch) + " and " + format_dims(s.b_batch) + " do not broadcast");
  }
  s.out = s.batch;
  if (!a_vector) s.out.push_back(s.m);
  if (!b_vector) s.out.push_back(s.n);
  return s;
}

void validate_matmul(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_MATMUL_N_INT_ATTRS, HIPDNN_EP_KERNEL_MATMUL_N_FLOAT_ATTRS, 2, 2, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::matmul, "matmul", dtype);
  call.expect_dtype(call.in(1), input_name(1), dtype);
  call.expect_out(dtype, matmul_shape(dims_of(call.in(0)), dims_of(call.in(1))).out);
}

void validate_gemm(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_GEMM_N_INT_ATTRS, HIPDNN_EP_KERNEL_GEMM_N_FLOAT_ATTRS, 2, 3, 1, 2);
  for (int32_t i : {HIPDNN_EP_KERNEL_GEMM_INT_ATTR_TRANS_A, HIPDNN_EP_KERNEL_GEMM_INT_ATTR_TRANS_B}) {
    const int64_t v = call.int_attr(i);
    if (v != 0 && v != 1) fail_invalid("trans_" + std::string(i == 0 ? "a" : "b") + " is " + std::to_string(v) + ", expected 0 or 1");
  }
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::gemm, "gemm", dtype);
  call.expect_dtype(call.in(1), input_name(1), dtype);
  const Dims a = dims_of(call.in(0));
  const Dims b = dims_of(call.in(1));
  if (a.size() != 2 || b.size() != 2) {
    fail_invalid("A " + format_dims(a) + " and B " + format_dims(b) + " must both have rank 2");
  }
  const bool ta = call.int_attr(HIPDNN_EP_KERNEL_GEMM_INT_ATTR_TRANS_A) != 0;
  const bool tb = call.int_attr(HIPDNN_EP_KERNEL_GEMM_INT_ATTR_TRANS_B) != 0;
  const int64_t m = ta ? a[1] : a[0];
  const int64_t k = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0];
  const int64_t n = tb ? b[0] : b[1];
  if (k != kb) {
    fail_invalid("op(A) has K = " + std::to_string(k) + " but op(B) has K = " + std::to_string(kb));
  }
  const Dims out{m, n};
  if (call.has_input(2)) {
    call.expect_dtype(call.in(2), input_name(2), dtype);
    if (!broadcasts_to(dims_of(call.in(2)), out)) {
      fail_invalid("C dims " + format_dims(dims_of(call.in(2))) + " do not broadcast to " + format_dims(out));
    }
  }
  call.expect_out(dtype, out);
}

void validate_softmax(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_SOFTMAX_N_INT_ATTRS, HIPDNN_EP_KERNEL_SOFTMAX_N_FLOAT_ATTRS, 1, 1, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::softmax, "softmax", dtype);
  const Dims x = dims_of(call.in(0));
  axis_attr(call, HIPDNN_EP_KERNEL_SOFTMAX_INT_ATTR_AXIS, x.size());
  call.expect_out(dtype, x);
}

void validate_layer_norm(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_LAYER_NORM_N_INT_ATTRS, HIPDNN_EP_KERNEL_LAYER_NORM_N_FLOAT_ATTRS, 2, 3, 1, 2);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::layer_norm, "layer_norm", dtype);
  const Dims x = dims_of(call.in(0));
  const int64_t axis = axis_attr(call, HIPDNN_EP_KERNEL_LAYER_NORM_INT_ATTR_AXIS, x.size());
  const double epsilon = call.float_attr(HIPDNN_EP_KERNEL_LAYER_NORM_FLOAT_ATTR_EPSILON);
  if (!(epsilon >= 0.0) || std::isinf(epsilon)) fail_invalid("epsilon " + std::to_string(epsilon) + " must be finite and >= 0");
  const Dims normalized(x.begin() + axis, x.end());
  for (int32_t i = 1; i < 3; ++i) {
    if (!call.has_input(i)) continue;
    call.expect_dtype(call.in(i), input_name(i), dtype);
    if (!broadcasts_to(dims_of(call.in(i)), normalized)) {
      fail_invalid(std::string(i == 1 ? "Scale" : "B") + " dims " + format_dims(dims_of(call.in(i))) +
                   " do not broadcast to the normalized dims " + format_dims(normalized));
    }
  }
  call.expect_out(dtype, x);
}

std::vector<bool> reduced_dims(const hipdnn_ep_tensor_ref_t& axes, size_t rank) {
  const Dims values = int64_vector(axes, "input 1 (axes)", dt::reduce_input_1);
  std::vector<bool> reduced(rank, values.empty());
  for (int64_t axis : values) {
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) {
      fail_invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) +
                   " (must be non-negative and below the rank)");
    }
    if (reduced[axis]) fail_invalid("axis " + std::to_string(axis) + " is listed twice");
    reduced[axis] = true;
  }
  return reduced;
}

void validate_reduce(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_REDUCE_N_INT_ATTRS, HIPDNN_EP_KERNEL_REDUCE_N_FLOAT_ATTRS, 2, 2, 1);
  const int64_t op = call.int_attr(HIPDNN_EP_KERNEL_REDUCE_INT_ATTR_OP);
  if (op < HIPDNN_EP_REDUCE_OP_SUM || op > HIPDNN_EP_REDUCE_OP_SUM_SQUARE) fail_invalid("unknown reduce op " + std::to_string(op));
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::reduce(op), "reduce op " + reduce_op_name(op), dtype);
  const Dims x = dims_of(call.in(0));
  const std::vector<bool> reduced = reduced_dims(call.in(1), x.size());
  Dims kept;
  Dims dropped;
  for (size_t d = 0; d < x.size(); ++d) {
    kept.push_back(reduced[d] ? 1 : x[d]);
    if (!reduced[d]) dropped.push_back(x[d]);
  }
  // keepdims is implied by the output's rank.
  const Dims out = dims_of(call.out(0));
  if (out.size() == x.size()) {
    call.expect_out(dtype, kept);
  } else if (out.size() == dropped.size()) {
    call.expect_out(dtype, dropped);
  } else {
    fail_invalid("output 0 has rank " + std::to_string(out.size()) + ", expected " + std::to_string(x.size()) +
                 " (keepdims) or " + std::to_string(dropped.size()));
  }
}

}  // namespace hipdnn_ep::kernels
