// CPU quantization kernels: quantize_linear, dequantize_linear, dynamic_quantize_linear and
// matmul_integer. Rounding is to nearest, ties to even (std::nearbyint in the default rounding
// mode), as ONNX and onnxruntime; the quantized value saturates to the output type's range.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm_core.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

template <typename Fn>
decltype(auto) dispatch_int8(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_INT8: return fn(TypeTag<int8_t>{});
    case HIPDNN_EP_DTYPE_UINT8: return fn(TypeTag<uint8_t>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(what) + " does not support dtype " + dtype_name(dtype));
}

// The quantized types of quantize_linear and dequantize_linear (matmul_integer stays 8-bit).
template <typename Fn>
decltype(auto) dispatch_quant(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_INT16: return fn(TypeTag<int16_t>{});
    case HIPDNN_EP_DTYPE_UINT16: return fn(TypeTag<uint16_t>{});
    default: break;
  }
  return dispatch_int8(dtype, what, std::forward<Fn>(fn));
}

template <typename Q>
Q saturate(float v) {
  constexpr float lo = std::numeric_limits<Q>::min();
  constexpr float hi = std::numeric_limits<Q>::max();
  if (std::isnan(v)) return Q{0};
  return static_cast<Q>(std::min(std::max(v, lo), hi));
}

QuantLayout layout_of(const hipdnn_ep_kernel_args_t& args) {
  return quant_layout(dims_of(args.inputs[0]), dims_of(args.inputs[1]), args.int_attrs[0], args.int_attrs[1]);
}

bool has_zero_point(const hipdnn_ep_kernel_args_t& args) {
  return args.n_inputs > 2 && is_present(args.inputs[2]);
}

}  // namespace

void quantize_linear(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const QuantLayout l = layout_of(args);
  const int64_t n = element_count(args.inputs[0]);
  const bool zp = has_zero_point(args);
  dispatch_float(args.inputs[0].dtype, "quantize_linear", [&](auto xtag) {
    using T = typename decltype(xtag)::type;
    const T* x = static_cast<const T*>(args.inputs[0].data);
    const T* scale = static_cast<const T*>(args.inputs[1].data);
    dispatch_quant(args.outputs[0].dtype, "quantize_linear", [&](auto qtag) {
      using Q = typename decltype(qtag)::type;
      const Q* z = zp ? static_cast<const Q*>(args.inputs[2].data) : nullptr;
      Q* y = static_cast<Q*>(args.outputs[0].data);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t s = l.scale_index(i);
        const float q = std::nearbyint(static_cast<float>(load(x, i)) / static_cast<float>(load(scale, s)));
        y[i] = saturate<Q>(q + (z ? static_cast<float>(z[s]) : 0.0f));
      }
    });
  });
}

void dequantize_linear(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const QuantLayout l = layout_of(args);
  const int64_t n = element_count(args.inputs[0]);
  const bool zp = has_zero_point(args);
  dispatch_any(args.inputs[0].dtype, "dequantize_linear", [&](auto qtag) {
    using Q = typename decltype(qtag)::type;
    if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int16_t> ||
                  std::is_same_v<Q, uint16_t> || std::is_same_v<Q, int32_t>) {
      const Q* x = static_cast<const Q*>(args.inputs[0].data);
      const Q* z = zp ? static_cast<const Q*>(args.inputs[2].data) : nullptr;
      dispatch_float(args.inputs[1].dtype, "dequantize_linear", [&](auto stag) {
        using T = typename decltype(stag)::type;
        const T* scale = static_cast<const T*>(args.inputs[1].data);
        T* y = static_cast<T*>(args.outputs[0].data);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t s = l.scale_index(i);
          // int32 minus int32 zero point in int64: no overflow
          const auto d = static_cast<int64_t>(x[i]) - (z ? static_cast<int64_t>(z[s]) : 0);
          store(y, i, static_cast<float>(d) * static_cast<float>(load(scale, s)));
        }
      });
    } else {
      fail(HIPDNN_EP_STATUS_UNSUPPORTED, "dequantize_linear does not support dtype " + dtype_name(args.inputs[0].dtype));
    }
  });
}

void dynamic_quantize_linear(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const float* x = static_cast<const float*>(args.inputs[0].data);
  const int64_t n = element_count(args.inputs[0]);
  float lo = 0.0f;
  float hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const uint8_t zero_point = saturate<uint8_t>(std::nearbyint(-lo / scale));
  auto* y = static_cast<uint8_t*>(args.outputs[0].data);
  for (int64_t i = 0; i < n; ++i) y[i] = saturate<uint8_t>(std::nearbyint(x[i] / scale) + zero_point);
  *static_cast<float*>(args.outputs[1].data) = scale;
  *static_cast<uint8_t*>(args.outputs[2].data) = zero_point;
}

void matmul_integer(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const MatmulShape s = matmul_shape(dims_of(args.inputs[0]), dims_of(args.inputs[1]));
  const int64_t batches = element_count(s.batch);
  const Dims a_strides = broadcast_strides(s.a_batch, s.batch);
  const Dims b_strides = broadcast_strides(s.b_batch, s.batch);
  const Dims out_strides = contiguous_strides(s.batch);
  auto zero_points = [&](int32_t i, int64_t count) {
    std::vector<int32_t> z(static_cast<size_t>(count), 0);
    if (args.n_inputs > i && is_present(args.inputs[i])) {
      const int64_t given = element_count(args.inputs[i]);
      dispatch_int8(args.inputs[i].dtype, "matmul_integer", [&](auto tag) {
        const auto* p = static_cast<const typename decltype(tag)::type*>(args.inputs[i].data);
        for (int64_t j = 0; j < count; ++j) z[j] = p[given == 1 ? 0 : j];
      });
    }
    return z;
  };
  const std::vector<int32_t> za = zero_points(2, s.m);
  const std::vector<int32_t> zb = zero_points(3, s.n);
  // operands less their zero points, as floats: integers in [-255, 255], so every product is below 2^16
  // in magnitude and a sum of kChunk of them below 2^24, exact in float whatever the order. The float
  // GEMM core (gemm_core.h) sums kChunk columns at a time; each chunk's exact sum is added to the int32
  // result in wrapping (uint32) arithmetic.
  constexpr int64_t kChunk = 256;
  auto widen = [&](int32_t i, int64_t offset, int64_t count, std::vector<float>& out, auto&& zero) {
    dispatch_int8(args.inputs[i].dtype, "matmul_integer", [&](auto tag) {
      const auto* p = static_cast<const typename decltype(tag)::type*>(args.inputs[i].data) + offset;
      for (int64_t j = 0; j < count; ++j) out[j] = static_cast<float>(static_cast<int32_t>(p[j]) - zero(j));
    });
  };
  std::vector<float> a(static_cast<size_t>(s.m * s.k));
  std::vector<float> b(static_cast<size_t>(s.k * s.n));
  std::vector<float> part(static_cast<size_t>(s.m * s.n));
  auto* y = static_cast<int32_t*>(args.outputs[0].data);
  for (int64_t batch = 0; batch < batches; ++batch) {
    int64_t a_off = 0;
    int64_t b_off = 0;
    for (size_t d = 0; d < s.batch.size(); ++d) {
      const int64_t idx = (batch / out_strides[d]) % s.batch[d];
      a_off += idx * a_strides[d];
      b_off += idx * b_strides[d];
    }
    widen(0, a_off * s.m * s.k, s.m * s.k, a, [&](int64_t j) { return za[j / s.k]; });
    widen(1, b_off * s.k * s.n, s.k * s.n, b, [&](int64_t j) { return zb[j % s.n]; });
    auto* yb = reinterpret_cast<uint32_t*>(y + batch * s.m * s.n);
    std::fill(yb, yb + s.m * s.n, 0u);
    for (int64_t k0 = 0; k0 < s.k; k0 += kChunk) {
      const int64_t kc = std::min(kChunk, s.k - k0);
      std::fill(part.begin(), part.end(), 0.0f);
      gemm_accumulate(s.m, s.n, kc, a.data(), HIPDNN_EP_DTYPE_FLOAT32, k0, s.k, b.data() + k0 * s.n, s.n, part.data());
      for (int64_t j = 0; j < s.m * s.n; ++j) yb[j] += static_cast<uint32_t>(static_cast<int32_t>(part[j]));
    }
  }
}

}  // namespace hipdnn_ep::kernels::cpu
