// Argument checks of the vision kernels (conv, pool, conv_transpose, resize,
// grid_sample, batch_norm, activation); see validate.h.
#include <cmath>
#include <string>

#include "kernels/resize_math.h"
#include "kernels/validate_util.h"

namespace hipdnn_ep::kernels {

using namespace validation;

namespace {

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

// A pool window's geometry (input 1: kernel, strides, pads begin, pads end, dilations per spatial dim) and
// output 0 over X (input 0): checked; output 0's dims returned.
Dims check_pool_window(const Call& call, const Dims& x, const Dims& geo) {
  const size_t r = x.size() - 2;
  if (geo.size() != 5 * r) fail_invalid("input 1 (window) has " + std::to_string(geo.size()) + " entries, expected " + std::to_string(5 * r));
  const Dims y = dims_of(call.out(0));
  if (y.size() != x.size() || y[0] != x[0] || y[1] != x[1]) {
    fail_invalid("output 0 has dims " + format_dims(y) + ", expected [" + std::to_string(x[0]) + ", " + std::to_string(x[1]) + ", ...]");
  }
  for (size_t d = 0; d < r; ++d) {
    check_window_output("spatial dim " + std::to_string(d), x[2 + d], y[2 + d], geo[d], geo[r + d], geo[2 * r + d],
                        geo[3 * r + d], geo[4 * r + d]);
  }
  return y;
}

}  // namespace

void validate_conv(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_CONV_N_INT_ATTRS, HIPDNN_EP_KERNEL_CONV_N_FLOAT_ATTRS, 4, 4, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::conv, "conv", dtype);
  const Dims x = spatial_input(call.in(0), "conv");
  const Dims w = dims_of(call.in(1));
  const int64_t group = call.int_attr(HIPDNN_EP_KERNEL_CONV_INT_ATTR_GROUP);
  call.expect_dtype(call.in(1), input_name(1), dtype);
  call.expect_dtype(call.in(2), input_name(2), dtype);
  check_conv_weights(x, w, group, ConvWeights::kForward);
  if (dims_of(call.in(2)) != Dims{w[0]}) fail_invalid("B has dims " + format_dims(dims_of(call.in(2))) + ", expected [" + std::to_string(w[0]) + "]");
  check_conv_geometry(call.in(3), "input 3 (geometry)", dt::conv_input_3, x, w, dims_of(call.out(0)), w[0],
                      ConvWeights::kForward);
  call.expect_dtype(call.out(0), output_name(0), dtype);
}

void validate_pool(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_POOL_N_INT_ATTRS, HIPDNN_EP_KERNEL_POOL_N_FLOAT_ATTRS, 2, 2, 1);
  const int32_t dtype = call.in(0).dtype;
  const int64_t op = call.int_attr(HIPDNN_EP_KERNEL_POOL_INT_ATTR_OP);
  if (op != HIPDNN_EP_POOL_OP_MAX && op != HIPDNN_EP_POOL_OP_AVERAGE) fail_invalid("unknown pool op " + std::to_string(op));
  require_dtype(dt::pool(op), "pool", dtype);
  const Dims x = spatial_input(call.in(0), "pool");
  check_pool_window(call, x, int64_vector(call.in(1), "input 1 (window)", dt::pool_input_1));
  call.expect_dtype(call.out(0), output_name(0), dtype);
}

void validate_max_pool_indices(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_MAX_POOL_INDICES_N_INT_ATTRS, HIPDNN_EP_KERNEL_MAX_POOL_INDICES_N_FLOAT_ATTRS, 2,
                  2, 2);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::max_pool_indices, "max_pool_indices", dtype);
  const int64_t order = call.int_attr(HIPDNN_EP_KERNEL_MAX_POOL_INDICES_INT_ATTR_STORAGE_ORDER);
  if (order != 0 && order != 1) fail_invalid("storage_order is " + std::to_string(order) + ", expected 0 or 1");
  const Dims x = spatial_input(call.in(0), "max_pool_indices");
  const Dims y = check_pool_window(call, x, int64_vector(call.in(1), "input 1 (window)", dt::max_pool_indices_input_1));
  call.expect_dtype(call.out(0), output_name(0), dtype);
  call.expect_dtype(call.out(1), output_name(1), HIPDNN_EP_DTYPE_INT64);
  expect_dims(call.out(1), output_name(1), y);
}

void validate_conv_transpose(const hipdnn_ep_kernel_args_t* args) {
  const Call call(args, HIPDNN_EP_KERNEL_CONV_TRANSPOSE_N_INT_ATTRS, HIPDNN_EP_KERNEL_CONV_TRANSPOSE_N_FLOAT_ATTRS, 4, 4, 1);
  const int32_t dtype = call.in(0).dtype;
  require_dtype(dt::conv_transpose, "conv_transpose", dtype);
  const Dims x = spatial_input(call.in(0), "conv_transpose");
  const Dims w = dims_of(call.in(1));
  const int64_t group = call.int_attr(HIPDNN_EP_KERNEL_CONV_TRANSPOSE_INT_ATTR_GROUP);
  call.expect_dtype(call.in(1), input_name(1), dtype);
  call.expect_dtype(call.in(2), input_name(2), dtype);
  check_conv_weights(x, w, group, ConvWeights::kTransposed);
  const int64_t maps = w[1] * group;
  if (dims_of(call.in(2)) != Dims{maps}) fail_invalid("B has dims " + format_dims(dims_of(call.in(2))) + ", expected [" + std::to_string(maps) + "]");
  check_conv_geometry(call.in(3), "input 3 (geometry)", dt::conv_transpose_input_3, x, w, dims_of(call.out(0)), maps,
                      ConvWeights::kTransposed);
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

}  // namespace hipdnn_ep::kernels
