#include "kernels/validate.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "kernel_dtypes.h"  // generated from the manifest's dtypes tables
#include "kernels/resize_math.h"

namespace hipdnn_ep::kernels {

namespace {

namespace dt = hipdnn_ep::kernel_dtypes;

// Code below and in the kernels reads these inputs as exactly these types
// (parameter tensors as int64_t on the host, cond as bytes, indices as
// int32_t/int64_t): growing their rule in the manifest needs code first.
static_assert(dt::where == dt::bit(HIPDNN_EP_DTYPE_BOOL), "where reads cond as BOOL");
static_assert(dt::gather_input_1 == (dt::bit(HIPDNN_EP_DTYPE_INT32) | dt::bit(HIPDNN_EP_DTYPE_INT64)),
              "gather reads indices as INT32 or INT64");
static_assert(dt::gather_elements_input_1 == dt::gather_input_1, "gather_elements reads indices as INT32 or INT64");
static_assert(dt::trilu_input_1 == dt::bit(HIPDNN_EP_DTYPE_INT64), "trilu's k is read as INT64");
static_assert(dt::scatter_nd_input_1 == dt::bit(HIPDNN_EP_DTYPE_INT64), "scatter_nd reads indices as INT64");
static_assert(dt::gather_nd_input_1 == dt::bit(HIPDNN_EP_DTYPE_INT64), "gather_nd reads indices as INT64");
static_assert(dt::scatter_elements_input_1 == dt::gather_input_1, "scatter_elements reads indices as INT32 or INT64");
static_assert(dt::pad_input_2 == dt::bit(HIPDNN_EP_DTYPE_INT64), "pad reads its pads as INT64");
static_assert(dt::reduce_input_1 == dt::bit(HIPDNN_EP_DTYPE_INT64), "reduce axes are read as INT64");
static_assert(dt::transpose_input_1 == dt::bit(HIPDNN_EP_DTYPE_INT64), "transpose perm is read as INT64");
static_assert(dt::slice_input_1 == dt::bit(HIPDNN_EP_DTYPE_INT64) && dt::slice_input_2 == dt::bit(HIPDNN_EP_DTYPE_INT64),
              "slice starts and steps are read as INT64");

// Ranks above this are taken for garbage rather than a real tensor.
constexpr int32_t kMaxRank = 64;

// The struct must cover every field validation reads: all of them so far.
constexpr uint64_t kArgsSizeRead = offsetof(hipdnn_ep_kernel_args_t, n_float_attrs) + sizeof(int32_t);

std::string input_name(int32_t i) { return "input " + std::to_string(i); }
std::string output_name(int32_t i) { return "output " + std::to_string(i); }

// Checks one tensor ref; an absent optional tensor passes when `optional`.
void check_tensor(const hipdnn_ep_tensor_ref_t& t, const std::string& name, bool optional) {
  if (t.data == nullptr && t.rank == -1) {
    if (optional) return;
    fail_invalid(name + " is absent but required");
  }
  if (t.rank < 0 || t.rank > kMaxRank) {
    fail_invalid(name + " has rank " + std::to_string(t.rank) + " (expected 0.." + std::to_string(kMaxRank) + ")");
  }
  if (t.rank > 0 && t.dims == nullptr) fail_invalid(name + " has rank " + std::to_string(t.rank) + " but dims is NULL");
  const size_t element_size = dtype_size(t.dtype);
  if (element_size == 0) fail(HIPDNN_EP_STATUS_UNSUPPORTED, name + " has unknown " + dtype_name(t.dtype));
  int64_t bytes = static_cast<int64_t>(element_size);
  bool empty = false;
  for (int32_t d = 0; d < t.rank; ++d) {
    if (t.dims[d] < 0) fail_invalid(name + " has negative dim " + std::to_string(t.dims[d]) + " at axis " + std::to_string(d));
    if (t.dims[d] == 0) empty = true;
    if (!empty && __builtin_mul_overflow(bytes, t.dims[d], &bytes)) {
      fail_invalid(name + " dims " + format_dims(dims_of(t)) + " overflow the addressable size");
    }
  }
  if (!empty && t.data == nullptr) fail_invalid(name + " has " + format_dims(dims_of(t)) + " elements but data is NULL");
}

// Pointers, counts and tensor refs of one call; accessors for the rest.
class Call {
 public:
  // Checks the struct, its attribute counts (exactly the manifest's) and the
  // input/output counts (in [min, max]); every tensor is checked with
  // inputs at index >= first_optional_input allowed to be absent.
  Call(const hipdnn_ep_kernel_args_t* args, int32_t n_int_attrs, int32_t n_float_attrs, int32_t min_inputs,
       int32_t max_inputs, int32_t n_outputs, int32_t first_optional_input = std::numeric_limits<int32_t>::max())
      : args_(args) {
    if (args == nullptr) fail_invalid("args is NULL");
    if (args->struct_size < kArgsSizeRead) {
      fail_invalid("args->struct_size is " + std::to_string(args->struct_size) + ", expected at least " +
                   std::to_string(kArgsSizeRead));
    }
    if (args->n_int_attrs != n_int_attrs) {
      fail_invalid("expected " + std::to_string(n_int_attrs) + " int attributes, got " + std::to_string(args->n_int_attrs));
    }
    if (args->n_float_attrs != n_float_attrs) {
      fail_invalid("expected " + std::to_string(n_float_attrs) + " float attributes, got " +
                   std::to_string(args->n_float_attrs));
    }
    if (n_int_attrs > 0 && args->int_attrs == nullptr) fail_invalid("int_attrs is NULL");
    if (n_float_attrs > 0 && args->float_attrs == nullptr) fail_invalid("float_attrs is NULL");
    if (args->n_inputs < min_inputs || args->n_inputs > max_inputs) {
      const std::string range = min_inputs == max_inputs ? std::to_string(min_inputs)
                                : max_inputs == std::numeric_limits<int32_t>::max()
                                    ? "at least " + std::to_string(min_inputs)
                                    : std::to_string(min_inputs) + " to " + std::to_string(max_inputs);
      fail_invalid("expected " + range + " inputs, got " + std::to_string(args->n_inputs));
    }
    if (args->n_outputs != n_outputs) {
      fail_invalid("expected " + std::to_string(n_outputs) + " outputs, got " + std::to_string(args->n_outputs));
    }
    if (args->n_inputs > 0 && args->inputs == nullptr) fail_invalid("inputs is NULL");
    if (args->outputs == nullptr) fail_invalid("outputs is NULL");
    for (int32_t i = 0; i < args->n_inputs; ++i) check_tensor(args->inputs[i], input_name(i), i >= first_optional_input);
    for (int32_t i = 0; i < args->n_outputs; ++i) check_tensor(args->outputs[i], output_name(i), false);
  }

  int32_t n_inputs() const { return args_->n_inputs; }
  const hipdnn_ep_tensor_ref_t& in(int32_t i) const { return args_->inputs[i]; }
  const hipdnn_ep_tensor_ref_t& out(int32_t i) const { return args_->outputs[i]; }
  bool has_input(int32_t i) const { return i < args_->n_inputs && is_present(args_->inputs[i]); }
  int64_t int_attr(int32_t i) const { return args_->int_attrs[i]; }
  double float_attr(int32_t i) const { return args_->float_attrs[i]; }

  void expect_dtype(const hipdnn_ep_tensor_ref_t& t, const std::string& name, int32_t dtype) const {
    if (t.dtype != dtype) fail_invalid(name + " has dtype " + dtype_name(t.dtype) + ", expected " + dtype_name(dtype));
  }
  void expect_out(int32_t dtype, const Dims& dims) const {
    expect_dtype(out(0), output_name(0), dtype);
    if (dims_of(out(0)) != dims) {
      fail_invalid("output 0 has dims " + format_dims(dims_of(out(0))) + ", expected " + format_dims(dims));
    }
  }

 private:
  const hipdnn_ep_kernel_args_t* args_;
};

// "INT32 or INT64": the dtypes of a mask, in code order.
std::string mask_names(dt::Mask mask) {
  std::string names;
  for (int32_t code = 0; code < 64; ++code) {
    if (!dt::accepts(mask, code)) continue;
    names += (names.empty() ? "" : " or ") + dtype_name(code);
  }
  return names;
}

// Input 0 against the kernel's rule; `what` names the kernel (and op) in the message.
void require_dtype(dt::Mask mask, const std::string& what, int32_t dtype) {
  if (!dt::accepts(mask, dtype)) fail(HIPDNN_EP_STATUS_UNSUPPORTED, what + " does not support dtype " + dtype_name(dtype));
}

// A later input that has a type of its own (cond, indices, axes...).
void require_input_dtype(const hipdnn_ep_tensor_ref_t& t, const std::string& name, dt::Mask mask) {
  if (!dt::accepts(mask, t.dtype)) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, name + " has dtype " + dtype_name(t.dtype) + ", expected " + mask_names(mask));
  }
}

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

// An attribute that names an axis of a rank-`rank` tensor.
int64_t axis_attr(const Call& call, int32_t index, size_t rank) {
  const int64_t axis = call.int_attr(index);
  if (axis < 0 || axis >= static_cast<int64_t>(rank)) {
    fail_invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) +
                 " (must be non-negative and below the rank)");
  }
  return axis;
}

// A rank-1 INT64 parameter tensor (axes, perm, starts, steps); returns its values.
// `mask` is the input's manifest rule (only INT64: see the static_asserts above).
Dims int64_vector(const hipdnn_ep_tensor_ref_t& t, const std::string& name, dt::Mask mask) {
  require_input_dtype(t, name, mask);
  if (t.rank != 1) fail_invalid(name + " has rank " + std::to_string(t.rank) + ", expected 1");
  const auto* values = static_cast<const int64_t*>(t.data);
  return Dims(values, values + t.dims[0]);
}

}  // namespace

bool binary_op_writes_bool(int64_t op) {
  return (op >= HIPDNN_EP_BINARY_OP_EQUAL && op <= HIPDNN_EP_BINARY_OP_GREATER) ||
         (op >= HIPDNN_EP_BINARY_OP_GREATER_OR_EQUAL && op <= HIPDNN_EP_BINARY_OP_XOR);
}

bool is_present(const hipdnn_ep_tensor_ref_t& tensor) { return !(tensor.data == nullptr && tensor.rank == -1); }

void validate_binary(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_BINARY_N_INT_ATTRS, HIPDNN_EP_KERNEL_BINARY_N_FLOAT_ATTRS, 2, 2, 1);
  const int64_t op = call.int_attr(HIPDNN_EP_KERNEL_BINARY_INT_ATTR_OP);
  if (op < HIPDNN_EP_BINARY_OP_ADD || op > HIPDNN_EP_BINARY_OP_SHIFT_RIGHT) {
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
  const Call call(args, HIPDNN_EP_KERNEL_CAST_N_INT_ATTRS, HIPDNN_EP_KERNEL_CAST_N_FLOAT_ATTRS, 1, 1, 1);
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

void validate_transpose(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_TRANSPOSE_N_INT_ATTRS, HIPDNN_EP_KERNEL_TRANSPOSE_N_FLOAT_ATTRS, 2, 2, 1);
  require_dtype(dt::transpose, "transpose", call.in(0).dtype);
  const Dims x = dims_of(call.in(0));
  const Dims perm = int64_vector(call.in(1), "input 1 (perm)", dt::transpose_input_1);
  if (perm.size() != x.size()) {
    fail_invalid("perm has " + std::to_string(perm.size()) + " entries for input rank " + std::to_string(x.size()));
  }
  std::vector<bool> seen(x.size(), false);
  Dims out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(x.size()) || seen[p]) {
      fail_invalid("perm " + format_dims(perm) + " is not a permutation of 0.." + std::to_string(x.size() - 1));
    }
    seen[p] = true;
    out.push_back(x[p]);
  }
  call.expect_out(call.in(0).dtype, out);
}

void validate_concat(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_CONCAT_N_INT_ATTRS, HIPDNN_EP_KERNEL_CONCAT_N_FLOAT_ATTRS, 1,
                  std::numeric_limits<int32_t>::max(), 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::concat, "concat", dtype);
  Dims out = dims_of(call.in(0));
  const int64_t axis = axis_attr(call, HIPDNN_EP_KERNEL_CONCAT_INT_ATTR_AXIS, out.size());
  for (int32_t i = 1; i < call.n_inputs(); ++i) {
    call.expect_dtype(call.in(i), input_name(i), dtype);
    const Dims d = dims_of(call.in(i));
    bool match = d.size() == out.size();
    for (size_t j = 0; match && j < d.size(); ++j) match = static_cast<int64_t>(j) == axis || d[j] == out[j];
    if (!match) {
      fail_invalid("input " + std::to_string(i) + " dims " + format_dims(d) + " differ from input 0 dims " +
                   format_dims(dims_of(call.in(0))) + " outside axis " + std::to_string(axis));
    }
    out[axis] += d[axis];
  }
  call.expect_out(dtype, out);
}

void validate_slice(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_SLICE_N_INT_ATTRS, HIPDNN_EP_KERNEL_SLICE_N_FLOAT_ATTRS, 3, 3, 1);
  require_dtype(dt::slice, "slice", call.in(0).dtype);
  const Dims x = dims_of(call.in(0));
  const Dims starts = int64_vector(call.in(1), "input 1 (starts)", dt::slice_input_1);
  const Dims steps = int64_vector(call.in(2), "input 2 (steps)", dt::slice_input_2);
  if (starts.size() != x.size() || steps.size() != x.size()) {
    fail_invalid("starts and steps have " + std::to_string(starts.size()) + " and " + std::to_string(steps.size()) +
                 " entries for input rank " + std::to_string(x.size()));
  }
  call.expect_dtype(call.out(0), output_name(0), call.in(0).dtype);
  const Dims out = dims_of(call.out(0));
  if (out.size() != x.size()) {
    fail_invalid("output 0 has rank " + std::to_string(out.size()) + ", expected " + std::to_string(x.size()));
  }
  for (size_t d = 0; d < x.size(); ++d) {
    const std::string where = " on axis " + std::to_string(d);
    if (steps[d] == 0) fail_invalid("step is 0" + where);
    if (out[d] == 0) continue;
    int64_t span = 0;
    int64_t last = 0;
    const bool in_range = out[d] <= x[d] && starts[d] >= 0 && starts[d] < x[d] &&
                          !__builtin_mul_overflow(out[d] - 1, steps[d], &span) &&
                          !__builtin_add_overflow(starts[d], span, &last) && last >= 0 && last < x[d];
    if (!in_range) {
      fail_invalid("start " + std::to_string(starts[d]) + ", step " + std::to_string(steps[d]) + " and count " +
                   std::to_string(out[d]) + where + " leave the input dim " + std::to_string(x[d]));
    }
  }
}

void validate_gather(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_GATHER_N_INT_ATTRS, HIPDNN_EP_KERNEL_GATHER_N_FLOAT_ATTRS, 2, 2, 1);
  require_dtype(dt::gather, "gather", call.in(0).dtype);
  const Dims data = dims_of(call.in(0));
  const int64_t axis = axis_attr(call, HIPDNN_EP_KERNEL_GATHER_INT_ATTR_AXIS, data.size());
  require_input_dtype(call.in(1), "input 1 (indices)", dt::gather_input_1);
  const Dims indices = dims_of(call.in(1));
  Dims out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  call.expect_out(call.in(0).dtype, out);
}

void validate_expand(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_EXPAND_N_INT_ATTRS, HIPDNN_EP_KERNEL_EXPAND_N_FLOAT_ATTRS, 1, 1, 1);
  require_dtype(dt::expand, "expand", call.in(0).dtype);
  const Dims x = dims_of(call.in(0));
  const Dims out = dims_of(call.out(0));
  call.expect_dtype(call.out(0), output_name(0), call.in(0).dtype);
  if (!broadcasts_to(x, out)) fail_invalid("input dims " + format_dims(x) + " do not broadcast to output dims " + format_dims(out));
}

// ---------------------------------------------------------------- shape and mask kernels (ABI 1.3)

void validate_range(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_RANGE_N_INT_ATTRS, HIPDNN_EP_KERNEL_RANGE_N_FLOAT_ATTRS, 1, 1, 1);
  const Dims params = int64_vector(call.in(0), "input 0 (start, delta)", dt::range);
  if (params.size() != 2) fail_invalid("input 0 (start, delta) has " + std::to_string(params.size()) + " entries, expected 2");
  const int32_t dtype = call.out(0).dtype;
  if (dtype != HIPDNN_EP_DTYPE_INT32 && dtype != HIPDNN_EP_DTYPE_INT64) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "range does not support output dtype " + dtype_name(dtype) + " (INT32 or INT64)");
  }
  if (call.out(0).rank != 1) fail_invalid("output 0 has rank " + std::to_string(call.out(0).rank) + ", expected 1");
}

void validate_gather_elements(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_GATHER_ELEMENTS_N_INT_ATTRS, HIPDNN_EP_KERNEL_GATHER_ELEMENTS_N_FLOAT_ATTRS, 2,
                  2, 1);
  require_dtype(dt::gather_elements, "gather_elements", call.in(0).dtype);
  const Dims data = dims_of(call.in(0));
  const int64_t axis = axis_attr(call, HIPDNN_EP_KERNEL_GATHER_ELEMENTS_INT_ATTR_AXIS, data.size());
  require_input_dtype(call.in(1), "input 1 (indices)", dt::gather_elements_input_1);
  const Dims indices = dims_of(call.in(1));
  if (indices.size() != data.size()) {
    fail_invalid("indices dims " + format_dims(indices) + " and data dims " + format_dims(data) + " differ in rank");
  }
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d]) {
      fail_invalid("indices dims " + format_dims(indices) + " exceed data dims " + format_dims(data) + " at axis " +
                   std::to_string(d));
    }
  }
  call.expect_out(call.in(0).dtype, indices);
}

void validate_cumsum(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_CUMSUM_N_INT_ATTRS, HIPDNN_EP_KERNEL_CUMSUM_N_FLOAT_ATTRS, 1, 1, 1);
  require_dtype(dt::cumsum, "cumsum", call.in(0).dtype);
  const Dims x = dims_of(call.in(0));
  axis_attr(call, HIPDNN_EP_KERNEL_CUMSUM_INT_ATTR_AXIS, x.size());
  call.expect_out(call.in(0).dtype, x);
}

void validate_trilu(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_TRILU_N_INT_ATTRS, HIPDNN_EP_KERNEL_TRILU_N_FLOAT_ATTRS, 2, 2, 1);
  const Dims x = dims_of(call.in(0));
  if (x.size() < 2) fail_invalid("input 0 has rank " + std::to_string(x.size()) + "; Trilu needs at least 2");
  const Dims k = int64_vector(call.in(1), "input 1 (k)", dt::trilu_input_1);
  if (k.size() != 1) fail_invalid("input 1 (k) has " + std::to_string(k.size()) + " entries, expected 1");
  call.expect_out(call.in(0).dtype, x);
}

void validate_fill(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_FILL_N_INT_ATTRS, HIPDNN_EP_KERNEL_FILL_N_FLOAT_ATTRS, 0, 0, 1);
}

// ---------------------------------------------------------------- general ops (ArgMax/ArgMin, ScatterND, Pad)

void validate_arg_reduce(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_ARG_REDUCE_N_INT_ATTRS, HIPDNN_EP_KERNEL_ARG_REDUCE_N_FLOAT_ATTRS, 1, 1, 1);
  require_dtype(dt::arg_reduce, "arg_reduce", call.in(0).dtype);
  const Dims x = dims_of(call.in(0));
  const int64_t axis = axis_attr(call, HIPDNN_EP_KERNEL_ARG_REDUCE_INT_ATTR_AXIS, x.size());
  Dims dropped = x;
  dropped.erase(dropped.begin() + axis);
  if (x[axis] == 0 && dims_product(dropped, 0, dropped.size()) != 0) {
    fail_invalid("axis " + std::to_string(axis) + " of input dims " + format_dims(x) +
                 " is empty: ArgMax/ArgMin of no elements has no index");
  }
  Dims kept = x;
  kept[axis] = 1;
  const Dims out = dims_of(call.out(0));
  call.expect_out(HIPDNN_EP_DTYPE_INT64, out.size() == x.size() ? kept : dropped);
}

void validate_top_k(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_TOP_K_N_INT_ATTRS, HIPDNN_EP_KERNEL_TOP_K_N_FLOAT_ATTRS, 1, 1, 2);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::top_k, "top_k", dtype);
  const Dims x = dims_of(call.in(0));
  if (x.empty()) fail_invalid("input 0 has rank 0; TopK needs at least 1");
  const int64_t axis = axis_attr(call, HIPDNN_EP_KERNEL_TOP_K_INT_ATTR_AXIS, x.size());
  for (int32_t a : {HIPDNN_EP_KERNEL_TOP_K_INT_ATTR_LARGEST, HIPDNN_EP_KERNEL_TOP_K_INT_ATTR_SORTED}) {
    if (call.int_attr(a) != 0 && call.int_attr(a) != 1) {
      fail_invalid("largest and sorted must be 0 or 1, got " + std::to_string(call.int_attr(a)));
    }
  }
  const Dims values = dims_of(call.out(0));
  if (values.size() != x.size()) {
    fail_invalid("output 0 has dims " + format_dims(values) + ", expected the rank of input dims " + format_dims(x));
  }
  const int64_t k = values[axis];
  if (k > x[axis]) {
    fail_invalid("k is " + std::to_string(k) + " but axis " + std::to_string(axis) + " of input dims " +
                 format_dims(x) + " has only " + std::to_string(x[axis]) + " elements");
  }
  Dims expected = x;
  expected[axis] = k;
  call.expect_out(dtype, expected);
  call.expect_dtype(call.out(1), "output 1 (indices)", HIPDNN_EP_DTYPE_INT64);
  if (dims_of(call.out(1)) != expected) {
    fail_invalid("output 1 has dims " + format_dims(dims_of(call.out(1))) + ", expected " + format_dims(expected));
  }
}

void validate_scatter_nd(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_SCATTER_ND_N_INT_ATTRS, HIPDNN_EP_KERNEL_SCATTER_ND_N_FLOAT_ATTRS, 3, 3, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::scatter_nd, "scatter_nd", dtype);
  const int64_t reduction = call.int_attr(HIPDNN_EP_KERNEL_SCATTER_ND_INT_ATTR_REDUCTION);
  if (reduction < 0 || reduction > 4) fail_invalid("unknown scatter_nd reduction " + std::to_string(reduction));
  if (reduction != 0 && dtype == HIPDNN_EP_DTYPE_BOOL) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "scatter_nd reduction " + std::to_string(reduction) + " does not take BOOL");
  }
  require_input_dtype(call.in(1), "input 1 (indices)", dt::scatter_nd_input_1);
  call.expect_dtype(call.in(2), "input 2 (updates)", dtype);
  const Dims data = dims_of(call.in(0));
  const Dims indices = dims_of(call.in(1));
  if (indices.empty()) fail_invalid("indices have rank 0; ScatterND needs at least 1");
  const int64_t k = indices.back();
  if (k < 1 || k > static_cast<int64_t>(data.size())) {
    fail_invalid("indices' last dim is " + std::to_string(k) + "; it must be in [1, data rank " +
                 std::to_string(data.size()) + "]");
  }
  Dims updates(indices.begin(), indices.end() - 1);
  updates.insert(updates.end(), data.begin() + k, data.end());
  if (dims_of(call.in(2)) != updates) {
    fail_invalid("updates dims " + format_dims(dims_of(call.in(2))) + " differ from " + format_dims(updates) +
                 " (indices dims but the last, then data dims from " + std::to_string(k) + ")");
  }
  call.expect_out(dtype, data);
}

void validate_gather_nd(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_GATHER_ND_N_INT_ATTRS, HIPDNN_EP_KERNEL_GATHER_ND_N_FLOAT_ATTRS, 2, 2, 1);
  require_dtype(dt::gather_nd, "gather_nd", call.in(0).dtype);
  require_input_dtype(call.in(1), "input 1 (indices)", dt::gather_nd_input_1);
  const Dims data = dims_of(call.in(0));
  const Dims indices = dims_of(call.in(1));
  const int64_t b = call.int_attr(HIPDNN_EP_KERNEL_GATHER_ND_INT_ATTR_BATCH_DIMS);
  if (indices.empty()) fail_invalid("indices have rank 0; GatherND needs at least 1");
  if (b < 0 || b >= static_cast<int64_t>(std::min(data.size(), indices.size()))) {
    fail_invalid("batch_dims " + std::to_string(b) + " must be below the ranks of data and indices");
  }
  for (int64_t d = 0; d < b; ++d) {
    if (data[d] != indices[d]) {
      fail_invalid("indices dims " + format_dims(indices) + " and data dims " + format_dims(data) +
                   " differ in batch dim " + std::to_string(d));
    }
  }
  const int64_t k = indices.back();
  if (k < 1 || b + k > static_cast<int64_t>(data.size())) {
    fail_invalid("indices' last dim is " + std::to_string(k) + "; it must be in [1, data rank - batch_dims]");
  }
  Dims out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  call.expect_out(call.in(0).dtype, out);
}

void validate_scatter_elements(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_SCATTER_ELEMENTS_N_INT_ATTRS, HIPDNN_EP_KERNEL_SCATTER_ELEMENTS_N_FLOAT_ATTRS,
                  3, 3, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::scatter_elements, "scatter_elements", dtype);
  const Dims data = dims_of(call.in(0));
  const int64_t axis = axis_attr(call, HIPDNN_EP_KERNEL_SCATTER_ELEMENTS_INT_ATTR_AXIS, data.size());
  const int64_t reduction = call.int_attr(HIPDNN_EP_KERNEL_SCATTER_ELEMENTS_INT_ATTR_REDUCTION);
  if (reduction < 0 || reduction > 4) fail_invalid("unknown scatter_elements reduction " + std::to_string(reduction));
  if (reduction != 0 && dtype == HIPDNN_EP_DTYPE_BOOL) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "scatter_elements reduction " + std::to_string(reduction) +
                                           " does not take BOOL");
  }
  require_input_dtype(call.in(1), "input 1 (indices)", dt::scatter_elements_input_1);
  call.expect_dtype(call.in(2), "input 2 (updates)", dtype);
  const Dims indices = dims_of(call.in(1));
  if (indices.size() != data.size()) {
    fail_invalid("indices dims " + format_dims(indices) + " and data dims " + format_dims(data) + " differ in rank");
  }
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d]) {
      fail_invalid("indices dims " + format_dims(indices) + " exceed data dims " + format_dims(data) + " at axis " +
                   std::to_string(d));
    }
  }
  if (dims_of(call.in(2)) != indices) {
    fail_invalid("updates dims " + format_dims(dims_of(call.in(2))) + " differ from indices dims " +
                 format_dims(indices));
  }
  call.expect_out(dtype, data);
}

void validate_pad(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_PAD_N_INT_ATTRS, HIPDNN_EP_KERNEL_PAD_N_FLOAT_ATTRS, 3, 3, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::pad, "pad", dtype);
  call.expect_dtype(call.in(1), "input 1 (constant value)", dtype);
  if (element_count(call.in(1)) != 1) {
    fail_invalid("input 1 (constant value) has " + std::to_string(element_count(call.in(1))) + " elements, expected 1");
  }
  const int64_t mode = call.int_attr(HIPDNN_EP_KERNEL_PAD_INT_ATTR_MODE);
  if (mode < 0 || mode > 3) fail_invalid("unknown pad mode " + std::to_string(mode));
  const Dims x = dims_of(call.in(0));
  const Dims pads = int64_vector(call.in(2), "input 2 (pads)", dt::pad_input_2);
  if (pads.size() != 2 * x.size()) {
    fail_invalid("pads has " + std::to_string(pads.size()) + " entries for input rank " + std::to_string(x.size()) +
                 ", expected " + std::to_string(2 * x.size()));
  }
  Dims out(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t begin = pads[d], end = pads[d + x.size()];
    out[d] = x[d] + begin + end;
    if (out[d] < 0) {
      fail_invalid("pads " + format_dims(pads) + " crop axis " + std::to_string(d) + " of size " + std::to_string(x[d]) +
                   " below 0");
    }
    if (mode != 0 && (begin > 0 || end > 0) && x[d] == 0) {
      fail_invalid("axis " + std::to_string(d) + " is empty; reflect, edge and wrap padding need elements to copy");
    }
    if (mode == 1 && (begin >= x[d] || end >= x[d]) && (begin > 0 || end > 0)) {
      fail_invalid("reflect pads " + format_dims(pads) + " on axis " + std::to_string(d) + " of size " +
                   std::to_string(x[d]) + " must be below the axis size");
    }
  }
  call.expect_out(dtype, out);
}

// ---------------------------------------------------------------- LLM kernels

namespace {

// Element count of a tensor, as the number of values it must hold.
void expect_count(const hipdnn_ep_tensor_ref_t& t, const std::string& name, int64_t count) {
  if (element_count(t) != count) {
    fail_invalid(name + " has " + std::to_string(element_count(t)) + " elements " + format_dims(dims_of(t)) +
                 ", expected " + std::to_string(count));
  }
}

void expect_dims(const hipdnn_ep_tensor_ref_t& t, const std::string& name, const Dims& dims) {
  if (dims_of(t) != dims) fail_invalid(name + " has dims " + format_dims(dims_of(t)) + ", expected " + format_dims(dims));
}

}  // namespace

void validate_matmul_nbits(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_MATMUL_NBITS_N_INT_ATTRS, HIPDNN_EP_KERNEL_MATMUL_NBITS_N_FLOAT_ATTRS, 3, 5, 1, 3);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::matmul_nbits, "matmul_nbits", dtype);
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
  const int64_t blocks = (k + block - 1) / block;
  int64_t b_bytes = 0;
  if (__builtin_mul_overflow(n, blocks * (block / 2), &b_bytes)) fail_invalid("N * K overflows");
  require_input_dtype(call.in(1), "input 1 (B)", dt::matmul_nbits_input_1);
  expect_count(call.in(1), "input 1 (B)", b_bytes);
  call.expect_dtype(call.in(2), "input 2 (scales)", dtype);
  expect_count(call.in(2), "input 2 (scales)", n * blocks);
  if (call.has_input(3)) {
    require_input_dtype(call.in(3), "input 3 (zero points)", dt::matmul_nbits_input_3);
    expect_count(call.in(3), "input 3 (zero points)", n * ((blocks + 1) / 2));
  }
  if (call.has_input(4)) {
    call.expect_dtype(call.in(4), "input 4 (bias)", dtype);
    expect_count(call.in(4), "input 4 (bias)", n);
  }
  Dims out = a;
  out.back() = n;
  call.expect_out(dtype, out);
}

void validate_rms_norm(const hipdnn_ep_kernel_args_t* args) {
  const int32_t n_outputs = args != nullptr && args->n_outputs == 2 ? 2 : 1;
  const Call call(args, HIPDNN_EP_KERNEL_RMS_NORM_N_INT_ATTRS, HIPDNN_EP_KERNEL_RMS_NORM_N_FLOAT_ATTRS, 2, 4, n_outputs, 2);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::rms_norm, "rms_norm", dtype);
  const Dims x = dims_of(call.in(0));
  const int64_t axis = axis_attr(call, HIPDNN_EP_KERNEL_RMS_NORM_INT_ATTR_AXIS, x.size());
  const double epsilon = call.float_attr(HIPDNN_EP_KERNEL_RMS_NORM_FLOAT_ATTR_EPSILON);
  if (!(epsilon >= 0.0) || std::isinf(epsilon)) fail_invalid("epsilon " + std::to_string(epsilon) + " must be finite and >= 0");
  const Dims normalized(x.begin() + axis, x.end());
  const char* names[] = {"X", "Scale", "Skip", "Bias"};
  for (int32_t i = 1; i < 4; ++i) {
    if (!call.has_input(i)) {
      if (i == 1) fail_invalid("Scale is absent but required");
      continue;
    }
    call.expect_dtype(call.in(i), input_name(i), dtype);
    const Dims& target = i == 2 ? x : normalized;
    if (!broadcasts_to(dims_of(call.in(i)), target)) {
      fail_invalid(std::string(names[i]) + " dims " + format_dims(dims_of(call.in(i))) + " do not broadcast to " +
                   format_dims(target));
    }
  }
  call.expect_out(dtype, x);
  if (n_outputs == 2) {
    call.expect_dtype(call.out(1), output_name(1), dtype);
    expect_dims(call.out(1), output_name(1) + " (the sum)", x);
  }
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

// ---------------------------------------------------------------- vision kernels (conv, pool, batch_norm, activation)

namespace {

// X [N, C, spatial...] with 1 to 3 spatial dims.
Dims spatial_input(const hipdnn_ep_tensor_ref_t& x, const char* what) {
  const Dims d = dims_of(x);
  if (d.size() < 3 || d.size() > 5) {
    fail_invalid(std::string("input 0 has dims ") + format_dims(d) + "; " + what + " needs [N, C, spatial...] with 1 to 3 spatial dims");
  }
  return d;
}

// The output spatial size a window geometry gives: floor((in + pads - dilated kernel) / stride) + 1,
// or a larger one (ceil_mode) no window of which starts past the input and its start pad.
void check_window_output(const std::string& where, int64_t in, int64_t out, int64_t kernel, int64_t stride,
                         int64_t pad_begin, int64_t pad_end, int64_t dilation) {
  if (kernel < 1 || stride < 1 || dilation < 1 || pad_begin < 0 || pad_end < 0) {
    fail_invalid(where + ": kernel " + std::to_string(kernel) + ", stride " + std::to_string(stride) + ", dilation " +
                 std::to_string(dilation) + " must be >= 1 and pads " + std::to_string(pad_begin) + ", " +
                 std::to_string(pad_end) + " >= 0");
  }
  const int64_t span = (kernel - 1) * dilation + 1;
  if (out < 0 || (out > 0 && (out - 1) * stride >= in + pad_begin + pad_end + stride)) {
    fail_invalid(where + ": output size " + std::to_string(out) + " does not fit input size " + std::to_string(in) +
                 " with kernel span " + std::to_string(span) + " and stride " + std::to_string(stride));
  }
}

}  // namespace

void validate_conv(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_CONV_N_INT_ATTRS, HIPDNN_EP_KERNEL_CONV_N_FLOAT_ATTRS, 4, 4, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::conv, "conv", dtype);
  const Dims x = spatial_input(call.in(0), "conv");
  const size_t r = x.size() - 2;
  const Dims w = dims_of(call.in(1));
  const int64_t group = call.int_attr(HIPDNN_EP_KERNEL_CONV_INT_ATTR_GROUP);
  call.expect_dtype(call.in(1), input_name(1), dtype);
  call.expect_dtype(call.in(2), input_name(2), dtype);
  if (w.size() != x.size()) fail_invalid("W has dims " + format_dims(w) + "; it must have X's rank " + std::to_string(x.size()));
  if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1]) {
    fail_invalid("group " + std::to_string(group) + " does not fit X channels " + std::to_string(x[1]) + " and W dims " +
                 format_dims(w) + " (X channels = W dim 1 * group, W dim 0 divisible by group)");
  }
  if (dims_of(call.in(2)) != Dims{w[0]}) fail_invalid("B has dims " + format_dims(dims_of(call.in(2))) + ", expected [" + std::to_string(w[0]) + "]");
  const Dims geo = int64_vector(call.in(3), "input 3 (geometry)", dt::conv_input_3);
  if (geo.size() != 3 * r) fail_invalid("input 3 (geometry) has " + std::to_string(geo.size()) + " entries, expected " + std::to_string(3 * r));
  const Dims y = dims_of(call.out(0));
  if (y.size() != x.size() || y[0] != x[0] || y[1] != w[0]) {
    fail_invalid("output 0 has dims " + format_dims(y) + ", expected [" + std::to_string(x[0]) + ", " + std::to_string(w[0]) + ", ...]");
  }
  for (size_t d = 0; d < r; ++d) {  // positions outside X read 0: any output size is safe to compute
    if (geo[d] < 1 || geo[r + d] < 0 || geo[2 * r + d] < 1 || w[2 + d] < 1) {
      fail_invalid("spatial dim " + std::to_string(d) + ": kernel " + std::to_string(w[2 + d]) + ", stride " +
                   std::to_string(geo[d]) + ", dilation " + std::to_string(geo[2 * r + d]) + " must be >= 1 and pad " +
                   std::to_string(geo[r + d]) + " >= 0");
    }
  }
  call.expect_dtype(call.out(0), output_name(0), dtype);
}

void validate_pool(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_POOL_N_INT_ATTRS, HIPDNN_EP_KERNEL_POOL_N_FLOAT_ATTRS, 2, 2, 1);
  const int32_t dtype = call.in(0).dtype;
  const int64_t op = call.int_attr(HIPDNN_EP_KERNEL_POOL_INT_ATTR_OP);
  if (op != HIPDNN_EP_POOL_OP_MAX && op != HIPDNN_EP_POOL_OP_AVERAGE) fail_invalid("unknown pool op " + std::to_string(op));
  require_dtype(dt::pool(op), "pool", dtype);
  const Dims x = spatial_input(call.in(0), "pool");
  const size_t r = x.size() - 2;
  const Dims geo = int64_vector(call.in(1), "input 1 (window)", dt::pool_input_1);
  if (geo.size() != 5 * r) fail_invalid("input 1 (window) has " + std::to_string(geo.size()) + " entries, expected " + std::to_string(5 * r));
  const Dims y = dims_of(call.out(0));
  if (y.size() != x.size() || y[0] != x[0] || y[1] != x[1]) {
    fail_invalid("output 0 has dims " + format_dims(y) + ", expected [" + std::to_string(x[0]) + ", " + std::to_string(x[1]) + ", ...]");
  }
  for (size_t d = 0; d < r; ++d) {
    check_window_output("spatial dim " + std::to_string(d), x[2 + d], y[2 + d], geo[d], geo[r + d], geo[2 * r + d],
                        geo[3 * r + d], geo[4 * r + d]);
  }
  call.expect_dtype(call.out(0), output_name(0), dtype);
}

void validate_conv_transpose(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_CONV_TRANSPOSE_N_INT_ATTRS, HIPDNN_EP_KERNEL_CONV_TRANSPOSE_N_FLOAT_ATTRS, 4, 4, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::conv_transpose, "conv_transpose", dtype);
  const Dims x = spatial_input(call.in(0), "conv_transpose");
  const size_t r = x.size() - 2;
  const Dims w = dims_of(call.in(1));
  const int64_t group = call.int_attr(HIPDNN_EP_KERNEL_CONV_TRANSPOSE_INT_ATTR_GROUP);
  call.expect_dtype(call.in(1), input_name(1), dtype);
  call.expect_dtype(call.in(2), input_name(2), dtype);
  if (w.size() != x.size()) fail_invalid("W has dims " + format_dims(w) + "; it must have X's rank " + std::to_string(x.size()));
  if (group < 1 || w[0] != x[1] || x[1] % group != 0) {
    fail_invalid("group " + std::to_string(group) + " does not fit X channels " + std::to_string(x[1]) + " and W dims " +
                 format_dims(w) + " (W dim 0 = X channels, divisible by group)");
  }
  const int64_t maps = w[1] * group;
  if (dims_of(call.in(2)) != Dims{maps}) fail_invalid("B has dims " + format_dims(dims_of(call.in(2))) + ", expected [" + std::to_string(maps) + "]");
  const Dims geo = int64_vector(call.in(3), "input 3 (geometry)", dt::conv_transpose_input_3);
  if (geo.size() != 3 * r) fail_invalid("input 3 (geometry) has " + std::to_string(geo.size()) + " entries, expected " + std::to_string(3 * r));
  const Dims y = dims_of(call.out(0));
  if (y.size() != x.size() || y[0] != x[0] || y[1] != maps) {
    fail_invalid("output 0 has dims " + format_dims(y) + ", expected [" + std::to_string(x[0]) + ", " + std::to_string(maps) + ", ...]");
  }
  for (size_t d = 0; d < r; ++d) {  // every output position is bounds-checked: any pad and output size is safe
    if (geo[d] < 1 || geo[2 * r + d] < 1 || w[2 + d] < 1) {
      fail_invalid("spatial dim " + std::to_string(d) + ": kernel " + std::to_string(w[2 + d]) + ", stride " +
                   std::to_string(geo[d]) + " and dilation " + std::to_string(geo[2 * r + d]) + " must be >= 1");
    }
  }
  call.expect_dtype(call.out(0), output_name(0), dtype);
}

void validate_resize(const hipdnn_ep_kernel_args_t* args) {
  namespace rs = hipdnn_ep::kernels::resize;
  const Call call(args, HIPDNN_EP_KERNEL_RESIZE_N_INT_ATTRS, HIPDNN_EP_KERNEL_RESIZE_N_FLOAT_ATTRS, 2, 2, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::resize, "resize", dtype);
  const Dims x = dims_of(call.in(0));
  const Dims y = dims_of(call.out(0));
  if (x.empty() || x.size() > static_cast<size_t>(rs::kMaxRank)) {
    fail_invalid("input 0 has rank " + std::to_string(x.size()) + "; resize takes 1 to " + std::to_string(rs::kMaxRank));
  }
  if (y.size() != x.size()) fail_invalid("output 0 has dims " + format_dims(y) + "; it must have X's rank " + std::to_string(x.size()));
  const int64_t mode = call.int_attr(HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_MODE);
  const int64_t coord = call.int_attr(HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_COORDINATE_MODE);
  const int64_t nearest = call.int_attr(HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_NEAREST_MODE);
  const int64_t antialias = call.int_attr(HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_ANTIALIAS);
  if (mode < 0 || mode > 2) fail_invalid("unknown resize mode " + std::to_string(mode));
  if (coord < 0 || coord > 6) fail_invalid("unknown coordinate_mode " + std::to_string(coord));
  if (nearest < 0 || nearest > 4) fail_invalid("unknown nearest_mode " + std::to_string(nearest));
  const double a = call.float_attr(HIPDNN_EP_KERNEL_RESIZE_FLOAT_ATTR_CUBIC_COEFF_A);
  if (!std::isfinite(a)) fail_invalid("cubic_coeff_a must be finite");
  const size_t r = x.size();
  const Dims geo = int64_vector(call.in(1), "input 1 (geometry)", dt::resize_input_1);
  if (geo.size() != 3 * r) fail_invalid("input 1 (geometry) has " + std::to_string(geo.size()) + " entries, expected " + std::to_string(3 * r));
  for (size_t d = 0; d < r; ++d) {
    if (y[d] > 0 && x[d] == 0) fail_invalid("axis " + std::to_string(d) + " of X is empty but the output's has " + std::to_string(y[d]) + " elements");
    for (size_t k = 0; k < 3; ++k) {
      if (geo[k * r + d] < 0 || geo[k * r + d] > 0xffffffffLL) fail_invalid("input 1 (geometry) entry " + std::to_string(k * r + d) + " is not float32 bits");
    }
    if (y[d] == 0 || x[d] == 0) continue;
    const float scale = rs::axis_scale(geo[d], x[d], y[d]);
    if (!(scale > 0.0f) || !std::isfinite(scale)) fail_invalid("axis " + std::to_string(d) + " has scale " + std::to_string(scale) + "; it must be finite and > 0");
    for (size_t k = 1; k < 3; ++k) {
      if (!std::isfinite(rs::bits_to_float(geo[k * r + d]))) fail_invalid("axis " + std::to_string(d) + " has a roi entry that is not finite");
    }
    if (mode != rs::kNearest && antialias && scale < 1.0f) {
      const int64_t taps = 2 - 2 * int64_t{rs::first_tap(static_cast<int>(mode), scale)};
      if (taps > rs::kMaxTaps) {
        fail(HIPDNN_EP_STATUS_UNSUPPORTED, "axis " + std::to_string(d) + ": an antialiased downscale by " + std::to_string(scale) +
                                               " takes " + std::to_string(taps) + " taps, more than " + std::to_string(rs::kMaxTaps));
      }
    }
  }
  call.expect_dtype(call.out(0), output_name(0), dtype);
}

void validate_grid_sample(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_GRID_SAMPLE_N_INT_ATTRS, HIPDNN_EP_KERNEL_GRID_SAMPLE_N_FLOAT_ATTRS, 2, 2, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::grid_sample, "grid_sample", dtype);
  const Dims x = spatial_input(call.in(0), "grid_sample");
  const size_t r = x.size() - 2;
  call.expect_dtype(call.in(1), input_name(1), dtype);
  const Dims g = dims_of(call.in(1));
  if (g.size() != x.size() || g[0] != x[0] || g.back() != static_cast<int64_t>(r)) {
    fail_invalid("grid has dims " + format_dims(g) + "; it must be [" + std::to_string(x[0]) + ", out..., " +
                 std::to_string(r) + "] for X " + format_dims(x));
  }
  const int64_t mode = call.int_attr(HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_MODE);
  const int64_t padding = call.int_attr(HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_PADDING_MODE);
  const int64_t align = call.int_attr(HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_ALIGN_CORNERS);
  if (mode < 0 || mode > 2) fail_invalid("unknown grid_sample mode " + std::to_string(mode));
  if (padding < 0 || padding > 2) fail_invalid("unknown padding_mode " + std::to_string(padding));
  if (align != 0 && align != 1) fail_invalid("align_corners must be 0 or 1");
  Dims y{x[0], x[1]};
  for (size_t d = 1; d + 1 < g.size(); ++d) y.push_back(g[d]);
  int64_t out_positions = 1;
  for (size_t d = 2; d < y.size(); ++d) out_positions *= y[d];
  for (size_t d = 2; d < x.size(); ++d) {
    if (x[d] == 0 && out_positions > 0 && x[1] > 0) fail_invalid("X has an empty spatial dim: nothing to sample");
  }
  call.expect_out(dtype, y);
}

void validate_batch_norm(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_BATCH_NORM_N_INT_ATTRS, HIPDNN_EP_KERNEL_BATCH_NORM_N_FLOAT_ATTRS, 5, 5, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::batch_norm, "batch_norm", dtype);
  const Dims x = dims_of(call.in(0));
  if (x.size() < 2) fail_invalid("input 0 has rank " + std::to_string(x.size()) + "; batch_norm needs at least 2");
  const double epsilon = call.float_attr(HIPDNN_EP_KERNEL_BATCH_NORM_FLOAT_ATTR_EPSILON);
  if (!(epsilon >= 0.0) || std::isinf(epsilon)) fail_invalid("epsilon " + std::to_string(epsilon) + " must be finite and >= 0");
  for (int32_t i = 1; i < 5; ++i) {
    call.expect_dtype(call.in(i), input_name(i), dtype);
    expect_dims(call.in(i), input_name(i), Dims{x[1]});
  }
  call.expect_out(dtype, x);
}

void validate_activation(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_ACTIVATION_N_INT_ATTRS, HIPDNN_EP_KERNEL_ACTIVATION_N_FLOAT_ATTRS, 1, 1, 1);
  const int64_t op = call.int_attr(HIPDNN_EP_KERNEL_ACTIVATION_INT_ATTR_OP);
  if (op < HIPDNN_EP_ACTIVATION_OP_HARD_SIGMOID || op > HIPDNN_EP_ACTIVATION_OP_THRESHOLDED_RELU) {
    fail_invalid("unknown activation op " + std::to_string(op));
  }
  require_dtype(dt::activation(op), "activation", call.in(0).dtype);
  call.expect_out(call.in(0).dtype, dims_of(call.in(0)));
}

// ---------------------------------------------------------------- end of the vision kernels


// ---------------------------------------------------------------- quantization family

QuantLayout quant_layout(const Dims& x, const Dims& scale, int64_t axis, int64_t block_size) {
  QuantLayout l;
  if (block_size < 0) fail_invalid("block_size is " + std::to_string(block_size) + ", expected >= 0");
  if (block_size == 0 && element_count(scale) == 1 && scale.size() <= 1) return l;
  const auto rank = static_cast<int64_t>(x.size());
  if (axis < -rank || axis >= rank) {
    fail_invalid("axis " + std::to_string(axis) + " is out of range for X of dims " + format_dims(x));
  }
  const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  l.len = x[a];
  l.inner = dims_product(x, a + 1, x.size());
  if (block_size == 0) {
    if (scale != Dims{x[a]}) {
      fail_invalid("scale has dims " + format_dims(scale) + "; per axis " + std::to_string(a) + " of X " +
                   format_dims(x) + " it must be [" + std::to_string(x[a]) + "] (or hold one value)");
    }
    l.mode = QuantLayout::kPerAxis;
    return l;
  }
  Dims want = x;
  want[a] = (x[a] + block_size - 1) / block_size;
  if (scale != want) {
    fail_invalid("scale has dims " + format_dims(scale) + "; blocks of " + std::to_string(block_size) +
                 " along axis " + std::to_string(a) + " of X " + format_dims(x) + " need " + format_dims(want));
  }
  l.mode = QuantLayout::kBlocked;
  l.block = block_size;
  l.blocks = want[a];
  return l;
}

namespace {

bool is_int8(int32_t dtype) { return dtype == HIPDNN_EP_DTYPE_INT8 || dtype == HIPDNN_EP_DTYPE_UINT8; }

// Scale and zero point (when given) of a quantize or dequantize call: checked against X's dims.
void check_scale_and_zero_point(const Call& call, int32_t zero_point_dtype) {
  const Dims scale = dims_of(call.in(1));
  quant_layout(dims_of(call.in(0)), scale, call.int_attr(0), call.int_attr(1));
  if (call.has_input(2)) {
    call.expect_dtype(call.in(2), "input 2 (zero_point)", zero_point_dtype);
    expect_dims(call.in(2), "input 2 (zero_point)", scale);
  }
}

}  // namespace

void validate_quantize_linear(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_QUANTIZE_LINEAR_N_INT_ATTRS, HIPDNN_EP_KERNEL_QUANTIZE_LINEAR_N_FLOAT_ATTRS,
                  2, 3, 1, 2);
  require_dtype(dt::quantize_linear, "quantize_linear", call.in(0).dtype);
  call.expect_dtype(call.in(1), "input 1 (scale)", call.in(0).dtype);
  const int32_t out = call.out(0).dtype;
  if (!is_int8(out)) fail(HIPDNN_EP_STATUS_UNSUPPORTED, "quantize_linear does not write dtype " + dtype_name(out));
  check_scale_and_zero_point(call, out);
  call.expect_out(out, dims_of(call.in(0)));
}

void validate_dequantize_linear(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_DEQUANTIZE_LINEAR_N_INT_ATTRS,
                  HIPDNN_EP_KERNEL_DEQUANTIZE_LINEAR_N_FLOAT_ATTRS, 2, 3, 1, 2);
  require_dtype(dt::dequantize_linear, "dequantize_linear", call.in(0).dtype);
  require_input_dtype(call.in(1), "input 1 (scale)", dt::dequantize_linear_input_1);
  check_scale_and_zero_point(call, call.in(0).dtype);
  call.expect_out(call.in(1).dtype, dims_of(call.in(0)));
}

void validate_dynamic_quantize_linear(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_DYNAMIC_QUANTIZE_LINEAR_N_INT_ATTRS,
                  HIPDNN_EP_KERNEL_DYNAMIC_QUANTIZE_LINEAR_N_FLOAT_ATTRS, 1, 1, 3);
  require_dtype(dt::dynamic_quantize_linear, "dynamic_quantize_linear", call.in(0).dtype);
  call.expect_out(HIPDNN_EP_DTYPE_UINT8, dims_of(call.in(0)));
  call.expect_dtype(call.out(1), "output 1 (y_scale)", HIPDNN_EP_DTYPE_FLOAT32);
  call.expect_dtype(call.out(2), "output 2 (y_zero_point)", HIPDNN_EP_DTYPE_UINT8);
  expect_dims(call.out(1), "output 1 (y_scale)", Dims{});
  expect_dims(call.out(2), "output 2 (y_zero_point)", Dims{});
}

void validate_matmul_integer(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_MATMUL_INTEGER_N_INT_ATTRS, HIPDNN_EP_KERNEL_MATMUL_INTEGER_N_FLOAT_ATTRS,
                  2, 4, 1, 2);
  require_dtype(dt::matmul_integer, "matmul_integer", call.in(0).dtype);
  require_input_dtype(call.in(1), "input 1 (B)", dt::matmul_integer_input_1);
  const MatmulShape s = matmul_shape(dims_of(call.in(0)), dims_of(call.in(1)));
  for (int32_t i : {2, 3}) {
    if (!call.has_input(i)) continue;
    const std::string name = i == 2 ? "input 2 (a_zero_point)" : "input 3 (b_zero_point)";
    call.expect_dtype(call.in(i), name, call.in(i - 2).dtype);
    const int64_t n = element_count(call.in(i));
    const int64_t per = i == 2 ? s.m : s.n;
    if (call.in(i).rank > 1 || (n != 1 && n != per)) {
      fail_invalid(name + " has dims " + format_dims(dims_of(call.in(i))) + "; it must hold one value or " +
                   std::to_string(per) + (i == 2 ? " (one per row of A)" : " (one per column of B)"));
    }
  }
  call.expect_out(HIPDNN_EP_DTYPE_INT32, s.out);
}

void validate_conv_integer(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_CONV_INTEGER_N_INT_ATTRS, HIPDNN_EP_KERNEL_CONV_INTEGER_N_FLOAT_ATTRS, 5, 5, 1);
  require_dtype(dt::conv_integer, "conv_integer", call.in(0).dtype);
  require_input_dtype(call.in(1), "input 1 (W)", dt::conv_integer_input_1);
  const Dims x = spatial_input(call.in(0), "conv_integer");
  const size_t r = x.size() - 2;
  const Dims w = dims_of(call.in(1));
  const int64_t group = call.int_attr(HIPDNN_EP_KERNEL_CONV_INTEGER_INT_ATTR_GROUP);
  if (w.size() != x.size()) fail_invalid("W has dims " + format_dims(w) + "; it must have X's rank " + std::to_string(x.size()));
  if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1]) {
    fail_invalid("group " + std::to_string(group) + " does not fit X channels " + std::to_string(x[1]) + " and W dims " +
                 format_dims(w) + " (X channels = W dim 1 * group, W dim 0 divisible by group)");
  }
  call.expect_dtype(call.in(2), "input 2 (x_zero_point)", call.in(0).dtype);
  call.expect_dtype(call.in(3), "input 3 (w_zero_point)", call.in(1).dtype);
  if (call.in(2).rank > 1 || element_count(call.in(2)) != 1) {
    fail_invalid("input 2 (x_zero_point) has dims " + format_dims(dims_of(call.in(2))) + "; it must hold one value");
  }
  const int64_t zw = element_count(call.in(3));
  if (call.in(3).rank > 1 || (zw != 1 && zw != w[0])) {
    fail_invalid("input 3 (w_zero_point) has dims " + format_dims(dims_of(call.in(3))) + "; it must hold one value or " +
                 std::to_string(w[0]) + " (one per output map)");
  }
  const Dims geo = int64_vector(call.in(4), "input 4 (geometry)", dt::conv_integer_input_4);
  if (geo.size() != 3 * r) fail_invalid("input 4 (geometry) has " + std::to_string(geo.size()) + " entries, expected " + std::to_string(3 * r));
  const Dims y = dims_of(call.out(0));
  if (y.size() != x.size() || y[0] != x[0] || y[1] != w[0]) {
    fail_invalid("output 0 has dims " + format_dims(y) + ", expected [" + std::to_string(x[0]) + ", " + std::to_string(w[0]) + ", ...]");
  }
  for (size_t d = 0; d < r; ++d) {  // positions outside X contribute 0: any output size is safe to compute
    if (geo[d] < 1 || geo[r + d] < 0 || geo[2 * r + d] < 1 || w[2 + d] < 1) {
      fail_invalid("spatial dim " + std::to_string(d) + ": kernel " + std::to_string(w[2 + d]) + ", stride " +
                   std::to_string(geo[d]) + ", dilation " + std::to_string(geo[2 * r + d]) + " must be >= 1 and pad " +
                   std::to_string(geo[r + d]) + " >= 0");
    }
  }
  call.expect_dtype(call.out(0), output_name(0), HIPDNN_EP_DTYPE_INT32);
}


}  // namespace hipdnn_ep::kernels
