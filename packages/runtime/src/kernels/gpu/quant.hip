// GPU quantization kernels: quantize_linear, dequantize_linear, dynamic_quantize_linear and
// matmul_integer, with the CPU backend's rounding (to nearest, ties to even: rintf) and saturation.
//
// dynamic_quantize_linear runs two kernels: one block finds the range and writes y_scale and
// y_zero_point to the outputs in device memory, then a grid-stride kernel quantizes with them;
// nothing is read back on the host. matmul_integer computes one output element per thread.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

template <typename Fn>
decltype(auto) dispatch_int8_gpu(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_INT8: return fn(TypeTag<int8_t>{});
    case HIPDNN_EP_DTYPE_UINT8: return fn(TypeTag<uint8_t>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(what) + " does not support dtype " + dtype_name(dtype));
}

// The quantized types of quantize_linear and dequantize_linear (matmul_integer stays 8-bit).
template <typename Fn>
decltype(auto) dispatch_quant_gpu(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_INT16: return fn(TypeTag<int16_t>{});
    case HIPDNN_EP_DTYPE_UINT16: return fn(TypeTag<uint16_t>{});
    default: break;
  }
  return dispatch_int8_gpu(dtype, what, std::forward<Fn>(fn));
}

template <typename Q>
struct Range;
template <>
struct Range<int16_t> {
  static constexpr float lo = -32768.0f, hi = 32767.0f;
};
template <>
struct Range<uint16_t> {
  static constexpr float lo = 0.0f, hi = 65535.0f;
};
template <>
struct Range<int8_t> {
  static constexpr float lo = -128.0f, hi = 127.0f;
};
template <>
struct Range<uint8_t> {
  static constexpr float lo = 0.0f, hi = 255.0f;
};

template <typename Q>
__device__ __forceinline__ Q saturate(float v) {
  if (isnan(v)) return Q{0};
  return static_cast<Q>(fminf(fmaxf(v, Range<Q>::lo), Range<Q>::hi));
}

// QuantLayout::scale_index, on the device.
struct DeviceLayout {
  int32_t mode;
  int64_t len, inner, blocks, block;
  __device__ __forceinline__ int64_t scale_index(int64_t i) const {
    if (mode == QuantLayout::kPerTensor) return 0;
    const int64_t l = (i / inner) % len;
    if (mode == QuantLayout::kPerAxis) return l;
    return ((i / inner / len) * blocks + l / block) * inner + i % inner;
  }
};

DeviceLayout device_layout(const hipdnn_ep_kernel_args_t& args) {
  const QuantLayout l =
      quant_layout(dims_of(args.inputs[0]), dims_of(args.inputs[1]), args.int_attrs[0], args.int_attrs[1]);
  return DeviceLayout{l.mode, l.len, l.inner, l.blocks, l.block};
}

const void* zero_point_of(const hipdnn_ep_kernel_args_t& args) {
  return args.n_inputs > 2 && is_present(args.inputs[2]) ? args.inputs[2].data : nullptr;
}

template <typename T, typename Q>
__global__ void quantize_kernel(const T* x, const T* scale, const Q* zp, Q* y, int64_t n, DeviceLayout l) {
  HIPDNN_EP_GRID_STRIDE(i, n) {
    const int64_t s = l.scale_index(i);
    const float q = rintf(static_cast<float>(load(x, i)) / static_cast<float>(load(scale, s)));
    y[i] = saturate<Q>(q + (zp ? static_cast<float>(zp[s]) : 0.0f));
  }
}

template <typename Q, typename T>
__global__ void dequantize_kernel(const Q* x, const T* scale, const Q* zp, T* y, int64_t n, DeviceLayout l) {
  HIPDNN_EP_GRID_STRIDE(i, n) {
    const int64_t s = l.scale_index(i);
    const int64_t d = static_cast<int64_t>(x[i]) - (zp ? static_cast<int64_t>(zp[s]) : 0);
    store(y, i, static_cast<float>(d) * static_cast<float>(load(scale, s)));
  }
}

struct MinOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fminf(a, b); }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// One block: the range of x (with 0), then y_scale and y_zero_point.
__global__ void dynamic_range_kernel(const float* x, int64_t n, float* scale_out, uint8_t* zp_out) {
  __shared__ float shared[kBlock];
  float lo = 0.0f;
  float hi = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  lo = block_reduce(lo, MinOp{}, shared);
  hi = block_reduce(hi, MaxOp{}, shared);
  if (threadIdx.x == 0) {
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    *scale_out = scale;
    *zp_out = saturate<uint8_t>(rintf(-lo / scale));
  }
}

__global__ void dynamic_quantize_kernel(const float* x, const float* scale, const uint8_t* zp, uint8_t* y,
                                        int64_t n) {
  const float s = *scale;
  const float z = static_cast<float>(*zp);
  HIPDNN_EP_GRID_STRIDE(i, n) { y[i] = saturate<uint8_t>(rintf(x[i] / s) + z); }
}

template <typename A, typename B>
__global__ void matmul_integer_kernel(const A* a, const B* b, const A* za, int64_t za_n, const B* zb, int64_t zb_n,
                                      int32_t* y, int64_t total, int64_t m, int64_t n, int64_t k,
                                      Layout<2> batch_layout) {
  HIPDNN_EP_GRID_STRIDE(idx, total) {
    const int64_t j = idx % n;
    const int64_t i = (idx / n) % m;
    const int64_t batch = idx / (n * m);
    int64_t off[2];
    offsets_at(batch_layout, batch, off);
    const A* arow = a + (off[0] * m + i) * k;
    const B* bmat = b + off[1] * k * n;
    const int32_t zai = za ? static_cast<int32_t>(za[za_n == 1 ? 0 : i]) : 0;
    const int32_t zbj = zb ? static_cast<int32_t>(zb[zb_n == 1 ? 0 : j]) : 0;
    uint32_t acc = 0;  // wraps like int32
    for (int64_t kk = 0; kk < k; ++kk) {
      acc += static_cast<uint32_t>(static_cast<int32_t>(arow[kk]) - zai) *
             static_cast<uint32_t>(static_cast<int32_t>(bmat[kk * n + j]) - zbj);
    }
    y[idx] = static_cast<int32_t>(acc);
  }
}

}  // namespace

void quantize_linear(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const int64_t n = element_count(args.inputs[0]);
  if (n == 0) return;
  const DeviceLayout l = device_layout(args);
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "quantize_linear", [&](auto xtag) {
    using T = typename decltype(xtag)::type;
    dispatch_quant_gpu(args.outputs[0].dtype, "quantize_linear", [&](auto qtag) {
      using Q = typename decltype(qtag)::type;
      quantize_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          static_cast<const T*>(args.inputs[0].data), static_cast<const T*>(args.inputs[1].data),
          static_cast<const Q*>(zero_point_of(args)), static_cast<Q*>(args.outputs[0].data), n, l);
    });
  });
  check_launch("quantize_linear");
}

void dequantize_linear(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const int64_t n = element_count(args.inputs[0]);
  if (n == 0) return;
  const DeviceLayout l = device_layout(args);
  const hipStream_t stream = current_stream(state);
  auto launch = [&](auto qtag) {
    using Q = typename decltype(qtag)::type;
    dispatch_float_gpu(args.inputs[1].dtype, "dequantize_linear", [&](auto stag) {
      using T = typename decltype(stag)::type;
      dequantize_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          static_cast<const Q*>(args.inputs[0].data), static_cast<const T*>(args.inputs[1].data),
          static_cast<const Q*>(zero_point_of(args)), static_cast<T*>(args.outputs[0].data), n, l);
    });
  };
  if (args.inputs[0].dtype == HIPDNN_EP_DTYPE_INT32) {
    launch(TypeTag<int32_t>{});
  } else {
    dispatch_quant_gpu(args.inputs[0].dtype, "dequantize_linear", launch);
  }
  check_launch("dequantize_linear");
}

void dynamic_quantize_linear(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const int64_t n = element_count(args.inputs[0]);
  const hipStream_t stream = current_stream(state);
  const auto* x = static_cast<const float*>(args.inputs[0].data);
  auto* scale = static_cast<float*>(args.outputs[1].data);
  auto* zp = static_cast<uint8_t*>(args.outputs[2].data);
  dynamic_range_kernel<<<1, kBlock, 0, stream>>>(x, n, scale, zp);
  check_launch("dynamic_quantize_linear");
  if (n == 0) return;
  dynamic_quantize_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, scale, zp, static_cast<uint8_t*>(args.outputs[0].data),
                                                              n);
  check_launch("dynamic_quantize_linear");
}

void matmul_integer(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const MatmulShape s = matmul_shape(dims_of(args.inputs[0]), dims_of(args.inputs[1]));
  const int64_t total = element_count(s.out);
  if (total == 0) return;
  const hipStream_t stream = current_stream(state);
  const Layout<2> batch_layout =
      make_layout<2>(s.batch, {broadcast_strides(s.a_batch, s.batch), broadcast_strides(s.b_batch, s.batch)});
  auto zero_point = [&](int32_t i) -> std::pair<const void*, int64_t> {
    if (args.n_inputs > i && is_present(args.inputs[i])) return {args.inputs[i].data, element_count(args.inputs[i])};
    return {nullptr, 1};
  };
  const auto za = zero_point(2);
  const auto zb = zero_point(3);
  dispatch_int8_gpu(args.inputs[0].dtype, "matmul_integer", [&](auto atag) {
    using A = typename decltype(atag)::type;
    dispatch_int8_gpu(args.inputs[1].dtype, "matmul_integer", [&](auto btag) {
      using B = typename decltype(btag)::type;
      matmul_integer_kernel<<<grid_for(total), kBlock, 0, stream>>>(
          static_cast<const A*>(args.inputs[0].data), static_cast<const B*>(args.inputs[1].data),
          static_cast<const A*>(za.first), za.second, static_cast<const B*>(zb.first), zb.second,
          static_cast<int32_t*>(args.outputs[0].data), total, s.m, s.n, s.k, batch_layout);
    });
  });
  check_launch("matmul_integer");
}

}  // namespace hipdnn_ep::kernels::gpu
