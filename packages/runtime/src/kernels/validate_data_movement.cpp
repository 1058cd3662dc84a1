// Argument checks of the data movement kernels (transpose, concat, slice, gather,
// expand) and the shape and mask kernels (range, gather_elements, cumsum, trilu, fill);
// see validate.h.
#include <limits>
#include <string>
#include <vector>

#include "kernels/validate_util.h"

namespace hipdnn_ep::kernels {

using namespace validation;

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

}  // namespace hipdnn_ep::kernels
