// Argument checks of the quantization family (quantize_linear, dequantize_linear,
// dynamic_quantize_linear, matmul_integer, conv_integer) and its scale layouts; see validate.h.
#include <string>

#include "kernels/validate_util.h"

namespace hipdnn_ep::kernels {

using namespace validation;

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

bool is_quantized_type(int32_t dtype) {
  return dtype == HIPDNN_EP_DTYPE_INT8 || dtype == HIPDNN_EP_DTYPE_UINT8 || dtype == HIPDNN_EP_DTYPE_INT16 ||
         dtype == HIPDNN_EP_DTYPE_UINT16;
}

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
  if (!is_quantized_type(out)) fail(HIPDNN_EP_STATUS_UNSUPPORTED, "quantize_linear does not write dtype " + dtype_name(out));
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
  const Dims w = dims_of(call.in(1));
  const int64_t group = call.int_attr(HIPDNN_EP_KERNEL_CONV_INTEGER_INT_ATTR_GROUP);
  check_conv_weights(x, w, group, ConvWeights::kForward);
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
  check_conv_geometry(call.in(4), "input 4 (geometry)", dt::conv_integer_input_4, x, w, dims_of(call.out(0)), w[0],
                      ConvWeights::kForward);
  call.expect_dtype(call.out(0), output_name(0), HIPDNN_EP_DTYPE_INT32);
}

}  // namespace hipdnn_ep::kernels
