// The checks every kernel's validation shares (validate_util.h) and the
// manifest's dtype rules that code reads as fixed types. The validators are in
// validate_<family>.cpp, one family of kernels each, as cpu/ is split.
#include "kernels/validate.h"

#include <cstddef>
#include <limits>
#include <string>

#include "kernels/validate_util.h"

namespace hipdnn_ep::kernels {

namespace validation {

namespace {

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

}  // namespace

std::string input_name(int32_t i) { return "input " + std::to_string(i); }
std::string output_name(int32_t i) { return "output " + std::to_string(i); }

Call::Call(const hipdnn_ep_kernel_args_t* args, int32_t n_int_attrs, int32_t n_float_attrs, int32_t min_inputs,
           int32_t max_inputs, int32_t n_outputs, int32_t first_optional_input)
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

void expect_dims(const hipdnn_ep_tensor_ref_t& t, const std::string& name, const Dims& dims) {
  if (dims_of(t) != dims) fail_invalid(name + " has dims " + format_dims(dims_of(t)) + ", expected " + format_dims(dims));
}

Dims spatial_input(const hipdnn_ep_tensor_ref_t& x, const char* what) {
  const Dims d = dims_of(x);
  if (d.size() < 3 || d.size() > 5) {
    fail_invalid(std::string("input 0 has dims ") + format_dims(d) + "; " + what + " needs [N, C, spatial...] with 1 to 3 spatial dims");
  }
  return d;
}

void check_conv_weights(const Dims& x, const Dims& w, int64_t group, ConvWeights layout) {
  if (w.size() != x.size()) fail_invalid("W has dims " + format_dims(w) + "; it must have X's rank " + std::to_string(x.size()));
  if (layout == ConvWeights::kForward) {
    if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1]) {
      fail_invalid("group " + std::to_string(group) + " does not fit X channels " + std::to_string(x[1]) + " and W dims " +
                   format_dims(w) + " (X channels = W dim 1 * group, W dim 0 divisible by group)");
    }
  } else if (group < 1 || w[0] != x[1] || x[1] % group != 0) {
    fail_invalid("group " + std::to_string(group) + " does not fit X channels " + std::to_string(x[1]) + " and W dims " +
                 format_dims(w) + " (W dim 0 = X channels, divisible by group)");
  }
}

void check_conv_geometry(const hipdnn_ep_tensor_ref_t& geometry, const std::string& name, dt::Mask mask,
                         const Dims& x, const Dims& w, const Dims& y, int64_t maps, ConvWeights layout) {
  const size_t r = x.size() - 2;
  const Dims geo = int64_vector(geometry, name, mask);
  if (geo.size() != 3 * r) fail_invalid(name + " has " + std::to_string(geo.size()) + " entries, expected " + std::to_string(3 * r));
  if (y.size() != x.size() || y[0] != x[0] || y[1] != maps) {
    fail_invalid("output 0 has dims " + format_dims(y) + ", expected [" + std::to_string(x[0]) + ", " + std::to_string(maps) + ", ...]");
  }
  for (size_t d = 0; d < r; ++d) {
    if (layout == ConvWeights::kTransposed) {  // every output position is bounds-checked: any pad and output size is safe
      if (geo[d] < 1 || geo[2 * r + d] < 1 || w[2 + d] < 1) {
        fail_invalid("spatial dim " + std::to_string(d) + ": kernel " + std::to_string(w[2 + d]) + ", stride " +
                     std::to_string(geo[d]) + " and dilation " + std::to_string(geo[2 * r + d]) + " must be >= 1");
      }
    } else if (geo[d] < 1 || geo[r + d] < 0 || geo[2 * r + d] < 1 || w[2 + d] < 1) {
      // positions outside X read 0: any output size is safe to compute
      fail_invalid("spatial dim " + std::to_string(d) + ": kernel " + std::to_string(w[2 + d]) + ", stride " +
                   std::to_string(geo[d]) + ", dilation " + std::to_string(geo[2 * r + d]) + " must be >= 1 and pad " +
                   std::to_string(geo[r + d]) + " >= 0");
    }
  }
}

}  // namespace validation

bool binary_op_writes_bool(int64_t op) {
  return (op >= HIPDNN_EP_BINARY_OP_EQUAL && op <= HIPDNN_EP_BINARY_OP_GREATER) ||
         (op >= HIPDNN_EP_BINARY_OP_GREATER_OR_EQUAL && op <= HIPDNN_EP_BINARY_OP_XOR);
}

bool is_present(const hipdnn_ep_tensor_ref_t& tensor) { return !(tensor.data == nullptr && tensor.rank == -1); }

}  // namespace hipdnn_ep::kernels
