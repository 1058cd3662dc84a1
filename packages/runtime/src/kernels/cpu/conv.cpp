// CPU convolution (ONNX Conv, 1 to 3 spatial dims, groups, strides, pads, dilations) as im2col + GEMM:
// per image and group, the input patches become a [C/group * kernel volume, output positions] float
// matrix that the MatMul core (gemm_core.h) multiplies by the group's weights [M/group, same]. A
// 1x1 convolution with stride 1 and no pads over float32 multiplies X itself. Accumulates in float.
// conv_integer (ONNX ConvInteger) is im2col of X less x_zero_point (padding 0, i.e. x_zero_point less
// itself) times W less its zero points through the same float GEMM core, exact: chunks of 256 columns,
// whose sums of integer products stay below 2^24, each added to the int32 result in wrapping arithmetic.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm_core.h"
#include "kernels/cpu/parallel.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// One convolution's geometry with the spatial dims padded to three (missing ones of size 1).
struct ConvGeometry {
  int64_t batch, channels, maps, group;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

ConvGeometry geometry_of(const hipdnn_ep_kernel_args_t& args, const hipdnn_ep_tensor_ref_t& geometry) {
  const Dims x = dims_of(args.inputs[0]);
  const Dims w = dims_of(args.inputs[1]);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(geometry.data);
  const size_t r = x.size() - 2;
  ConvGeometry g{x[0], x[1], w[0], args.int_attrs[HIPDNN_EP_KERNEL_CONV_INT_ATTR_GROUP]};
  const size_t first = 3 - r;  // right-align: a 1-D conv is [1, 1, W]
  for (size_t d = 0; d < r; ++d) {
    g.in[first + d] = x[2 + d];
    g.out[first + d] = y[2 + d];
    g.kernel[first + d] = w[2 + d];
    g.stride[first + d] = geo[d];
    g.pad[first + d] = geo[r + d];
    g.dilation[first + d] = geo[2 * r + d];
  }
  return g;
}

// col[(c * kernel_size + kk) * out_size + o] = x(c, input position of output o under kernel offset kk), 0 outside.
template <typename T>
void im2col(const T* x, int64_t channels, const ConvGeometry& g, float* col) {
  const int64_t out_size = g.out_size();
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * g.in_size();
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
          float* row = col + (((c * g.kernel[0] + kd) * g.kernel[1] + kh) * g.kernel[2] + kw) * out_size;
          for (int64_t od = 0; od < g.out[0]; ++od) {
            const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
            for (int64_t oh = 0; oh < g.out[1]; ++oh) {
              const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
              float* dst = row + (od * g.out[1] + oh) * g.out[2];
              if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                std::fill(dst, dst + g.out[2], 0.0f);
                continue;
              }
              const T* src = xc + (id * g.in[1] + ih) * g.in[2];
              for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                const int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
                dst[ow] = iw >= 0 && iw < g.in[2] ? load(src, iw) : 0.0f;
              }
            }
          }
        }
      }
    }
  }
}

template <typename Fn>
decltype(auto) dispatch_int8(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_INT8: return fn(TypeTag<int8_t>{});
    case HIPDNN_EP_DTYPE_UINT8: return fn(TypeTag<uint8_t>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(what) + " does not support dtype " + dtype_name(dtype));
}

bool is_pointwise(const ConvGeometry& g) {
  for (int d = 0; d < 3; ++d) {
    if (g.kernel[d] != 1 || g.stride[d] != 1 || g.pad[d] != 0 || g.in[d] != g.out[d]) return false;
  }
  return true;
}

}  // namespace

void conv(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& xt = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& wt = args.inputs[1];
  const ConvGeometry g = geometry_of(args, args.inputs[3]);
  const int64_t out_size = g.out_size();
  if (g.batch == 0 || g.maps == 0 || out_size == 0) return;
  const int64_t cg = g.channels / g.group;  // input channels per group
  const int64_t mg = g.maps / g.group;      // output maps per group
  const int64_t k = cg * g.kernel_size();
  const bool direct = is_pointwise(g) && xt.dtype == HIPDNN_EP_DTYPE_FLOAT32;
  std::vector<float> col(direct ? 0 : static_cast<size_t>(k * out_size));
  std::vector<float> acc(static_cast<size_t>(mg * out_size));
  dispatch_float(xt.dtype, "conv", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(xt.data);
    const T* bias = static_cast<const T*>(args.inputs[2].data);
    T* y = static_cast<T*>(args.outputs[0].data);
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t grp = 0; grp < g.group; ++grp) {
        const T* xg = x + (n * g.channels + grp * cg) * g.in_size();
        const float* b = nullptr;
        if constexpr (std::is_same_v<T, float>) {
          if (direct) b = xg;
        }
        if (b == nullptr) {
          im2col(xg, cg, g, col.data());
          b = col.data();
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        gemm_accumulate(mg, out_size, k, wt.data, wt.dtype, grp * mg * k, k, b, out_size, acc.data());
        T* yg = y + (n * g.maps + grp * mg) * out_size;
        for (int64_t m = 0; m < mg; ++m) {
          const float bm = load(bias, grp * mg + m);
          for (int64_t o = 0; o < out_size; ++o) store(yg, m * out_size + o, acc[m * out_size + o] + bm);
        }
      }
    }
  });
}

void conv_integer(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const ConvGeometry g = geometry_of(args, args.inputs[4]);
  const int64_t out_size = g.out_size();
  if (g.batch == 0 || g.maps == 0 || out_size == 0) return;
  const int64_t cg = g.channels / g.group;
  const int64_t mg = g.maps / g.group;
  const int64_t k = cg * g.kernel_size();
  auto widen = [&](int32_t i, int64_t count, auto&& fn) {
    dispatch_int8(args.inputs[i].dtype, "conv_integer", [&](auto tag) {
      const auto* p = static_cast<const typename decltype(tag)::type*>(args.inputs[i].data);
      for (int64_t j = 0; j < count; ++j) fn(j, static_cast<int32_t>(p[j]));
    });
  };
  int32_t zx = 0;
  widen(2, 1, [&](int64_t, int32_t v) { zx = v; });
  const int64_t zw_n = element_count(args.inputs[3]);
  std::vector<int32_t> zw(static_cast<size_t>(zw_n));
  widen(3, zw_n, [&](int64_t j, int32_t v) { zw[j] = v; });
  // W less its zero points and X less x_zero_point (padding, read as 0, then contributes 0), as floats:
  // both are integers in [-255, 255], so every product is an integer below 2^16 in magnitude and any sum
  // of kChunk of them stays below 2^24, exact in float whatever the order. The float GEMM core sums
  // chunks of kChunk columns; each chunk's (exact) sum is added to the int32 result in wrapping uint32.
  constexpr int64_t kChunk = 256;
  std::vector<float> w(static_cast<size_t>(g.maps * k));
  widen(1, g.maps * k, [&](int64_t j, int32_t v) { w[j] = static_cast<float>(v - zw[zw_n == 1 ? 0 : j / k]); });
  std::vector<float> xs(static_cast<size_t>(g.batch * g.channels * g.in_size()));
  widen(0, static_cast<int64_t>(xs.size()), [&](int64_t j, int32_t v) { xs[j] = static_cast<float>(v - zx); });
  std::vector<float> col(static_cast<size_t>(k * out_size));
  std::vector<float> part(static_cast<size_t>(mg * out_size));
  auto* y = static_cast<int32_t*>(args.outputs[0].data);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      im2col(xs.data() + (n * g.channels + grp * cg) * g.in_size(), cg, g, col.data());
      auto* yg = reinterpret_cast<uint32_t*>(y + (n * g.maps + grp * mg) * out_size);
      std::fill(yg, yg + mg * out_size, 0u);
      for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
        const int64_t kc = std::min(kChunk, k - k0);
        std::fill(part.begin(), part.end(), 0.0f);
        gemm_accumulate(mg, out_size, kc, w.data(), HIPDNN_EP_DTYPE_FLOAT32, grp * mg * k + k0, k,
                        col.data() + k0 * out_size, out_size, part.data());
        for (int64_t j = 0; j < mg * out_size; ++j) {
          yg[j] += static_cast<uint32_t>(static_cast<int32_t>(part[j]));
        }
      }
    }
  }
}

// ConvTranspose as GEMM + col2im: per image and group, columns[M/group * kernel volume, input positions]
// = W_g^T x X_g (W_g [C/group, M/group * kernel volume] transposed once per group into float), then
// every column entry is added to the output position its input position and tap reach (if inside).
void conv_transpose(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& xt = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& wt = args.inputs[1];
  const Dims x = dims_of(xt);
  const Dims w = dims_of(wt);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(args.inputs[3].data);
  const size_t r = x.size() - 2;
  const int64_t group = args.int_attrs[HIPDNN_EP_KERNEL_CONV_TRANSPOSE_INT_ATTR_GROUP];
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};
  const size_t first = 3 - r;
  for (size_t d = 0; d < r; ++d) {
    in[first + d] = x[2 + d];
    out[first + d] = y[2 + d];
    kernel[first + d] = w[2 + d];
    stride[first + d] = geo[d];
    pad[first + d] = geo[r + d];
    dil[first + d] = geo[2 * r + d];
  }
  const int64_t in_size = in[0] * in[1] * in[2];
  const int64_t out_size = out[0] * out[1] * out[2];
  const int64_t kvol = kernel[0] * kernel[1] * kernel[2];
  const int64_t cg = x[1] / group;
  const int64_t mg = w[1];
  const int64_t maps = mg * group;
  if (x[0] == 0 || maps == 0 || out_size == 0) return;
  const int64_t rows = mg * kvol;
  std::vector<float> wt_f(static_cast<size_t>(rows * cg));
  std::vector<float> xg_f(static_cast<size_t>(cg * in_size));
  std::vector<float> col(static_cast<size_t>(rows * in_size));
  std::vector<float> acc(static_cast<size_t>(mg * out_size));
  dispatch_float(xt.dtype, "conv_transpose", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(xt.data);
    const T* wp = static_cast<const T*>(wt.data);
    const T* bias = static_cast<const T*>(args.inputs[2].data);
    T* yp = static_cast<T*>(args.outputs[0].data);
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t c = 0; c < cg; ++c) {  // wt_f[row, c] = W[g * cg + c, row]
        for (int64_t row = 0; row < rows; ++row) wt_f[row * cg + c] = load(wp, (g * cg + c) * rows + row);
      }
      for (int64_t n = 0; n < x[0]; ++n) {
        const int64_t xoff = (n * x[1] + g * cg) * in_size;
        for (int64_t i = 0; i < cg * in_size; ++i) xg_f[i] = load(xp, xoff + i);
        std::fill(col.begin(), col.end(), 0.0f);
        gemm_accumulate(rows, in_size, cg, wt_f.data(), HIPDNN_EP_DTYPE_FLOAT32, 0, cg, xg_f.data(), in_size,
                        col.data());
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t m = 0; m < mg; ++m) {
          for (int64_t kd = 0; kd < kernel[0]; ++kd) {
            for (int64_t kh = 0; kh < kernel[1]; ++kh) {
              for (int64_t kw = 0; kw < kernel[2]; ++kw) {
                const float* src = col.data() + (((m * kernel[0] + kd) * kernel[1] + kh) * kernel[2] + kw) * in_size;
                float* dst = acc.data() + m * out_size;
                for (int64_t id = 0; id < in[0]; ++id) {
                  const int64_t od = id * stride[0] - pad[0] + kd * dil[0];
                  if (od < 0 || od >= out[0]) continue;
                  for (int64_t ih = 0; ih < in[1]; ++ih) {
                    const int64_t oh = ih * stride[1] - pad[1] + kh * dil[1];
                    if (oh < 0 || oh >= out[1]) continue;
                    const float* s = src + (id * in[1] + ih) * in[2];
                    float* t = dst + (od * out[1] + oh) * out[2];
                    for (int64_t iw = 0; iw < in[2]; ++iw) {
                      const int64_t ow = iw * stride[2] - pad[2] + kw * dil[2];
                      if (ow >= 0 && ow < out[2]) t[ow] += s[iw];
                    }
                  }
                }
              }
            }
          }
        }
        T* yg = yp + (n * maps + g * mg) * out_size;
        for (int64_t m = 0; m < mg; ++m) {
          const float bm = load(bias, g * mg + m);
          for (int64_t o = 0; o < out_size; ++o) store(yg, m * out_size + o, acc[m * out_size + o] + bm);
        }
      }
    }
  });
}

}  // namespace hipdnn_ep::kernels::cpu
