// Argument checks of the general ops (ArgMax/ArgMin, TopK, ScatterND, GatherND,
// ScatterElements, Pad); see validate.h.
#include <algorithm>
#include <string>

#include "kernels/validate_util.h"

namespace hipdnn_ep::kernels {

using namespace validation;

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

}  // namespace hipdnn_ep::kernels
