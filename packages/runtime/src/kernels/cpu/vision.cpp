// CPU kernels of the vision family besides convolution: pooling (max, average, and the global
// forms the compiler passes as a window over the whole input), inference-mode batch
// normalization and the parametric activations. All compute in float whatever the storage dtype.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/grid_sample_math.h"
#include "kernels/resize_math.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// A pooling window's geometry, the spatial dims padded to three (missing ones of size 1).
struct PoolGeometry {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0},
      pad_end{0, 0, 0}, dilation{1, 1, 1};
};

PoolGeometry pool_geometry(const hipdnn_ep_kernel_args_t& args) {
  const Dims x = dims_of(args.inputs[0]);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(args.inputs[1].data);
  const size_t r = x.size() - 2;
  const size_t first = 3 - r;
  PoolGeometry g;
  for (size_t d = 0; d < r; ++d) {
    g.in[first + d] = x[2 + d];
    g.out[first + d] = y[2 + d];
    g.kernel[first + d] = geo[d];
    g.stride[first + d] = geo[r + d];
    g.pad[first + d] = geo[2 * r + d];
    g.pad_end[first + d] = geo[3 * r + d];
    g.dilation[first + d] = geo[4 * r + d];
  }
  return g;
}

// The window of output position o (flat over the padded spatial dims): per dim, the first tap's input
// index and the taps inside X, [lo, hi); and how many taps lie inside X and its pads.
struct PoolWindow {
  std::array<int64_t, 3> first{}, lo{}, hi{};
  int64_t padded = 1;
};

PoolWindow pool_window(const PoolGeometry& g, int64_t o) {
  const std::array<int64_t, 3> pos{o / (g.out[1] * g.out[2]), (o / g.out[2]) % g.out[1], o % g.out[2]};
  PoolWindow w;
  for (int d = 0; d < 3; ++d) {
    w.first[d] = pos[d] * g.stride[d] - g.pad[d];
    w.lo[d] = g.kernel[d];
    int64_t in_pads = 0;
    for (int64_t t = 0; t < g.kernel[d]; ++t) {
      const int64_t i = w.first[d] + t * g.dilation[d];
      if (i < g.in[d] + g.pad_end[d]) ++in_pads;
      if (i >= 0 && i < g.in[d]) {
        w.lo[d] = std::min(w.lo[d], t);
        w.hi[d] = t + 1;
      }
    }
    w.padded *= in_pads;
  }
  return w;
}

// Calls tap(i0, i1, i2) for each tap of the window inside X, in row-major order.
template <typename Tap>
void for_each_tap(const PoolGeometry& g, const PoolWindow& w, Tap&& tap) {
  for (int64_t a = w.lo[0]; a < w.hi[0]; ++a) {
    const int64_t i0 = w.first[0] + a * g.dilation[0];
    for (int64_t b = w.lo[1]; b < w.hi[1]; ++b) {
      const int64_t i1 = w.first[1] + b * g.dilation[1];
      for (int64_t c = w.lo[2]; c < w.hi[2]; ++c) tap(i0, i1, w.first[2] + c * g.dilation[2]);
    }
  }
}

}  // namespace

void pool(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& xt = args.inputs[0];
  const PoolGeometry g = pool_geometry(args);
  const bool is_max = args.int_attrs[HIPDNN_EP_KERNEL_POOL_INT_ATTR_OP] == HIPDNN_EP_POOL_OP_MAX;
  const bool include_pad = args.int_attrs[HIPDNN_EP_KERNEL_POOL_INT_ATTR_COUNT_INCLUDE_PAD] != 0;
  const Dims x = dims_of(xt);
  const int64_t planes = x[0] * x[1];
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_size = g.out[0] * g.out[1] * g.out[2];
  dispatch_float(xt.dtype, "pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(xt.data);
    T* yp = static_cast<T*>(args.outputs[0].data);
    for (int64_t p = 0; p < planes; ++p) {
      const T* src = xp + p * in_size;
      for (int64_t o = 0; o < out_size; ++o) {
        const PoolWindow w = pool_window(g, o);
        float best = -std::numeric_limits<float>::infinity();
        float sum = 0.0f;
        int64_t inside = 0;  // taps inside X (the divisor without count_include_pad)
        for_each_tap(g, w, [&](int64_t i0, int64_t i1, int64_t i2) {
          const float v = load(src, (i0 * g.in[1] + i1) * g.in[2] + i2);
          best = v > best || std::isnan(v) ? v : best;
          sum += v;
          ++inside;
        });
        float value = best;
        if (!is_max) {
          const int64_t divisor = include_pad ? w.padded : inside;
          value = divisor > 0 ? sum / static_cast<float>(divisor) : std::numeric_limits<float>::quiet_NaN();
        }
        store(yp + p * out_size, o, value);
      }
    }
  });
}

void max_pool_indices(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& xt = args.inputs[0];
  const PoolGeometry g = pool_geometry(args);
  const bool column_major = args.int_attrs[HIPDNN_EP_KERNEL_MAX_POOL_INDICES_INT_ATTR_STORAGE_ORDER] != 0;
  const Dims x = dims_of(xt);
  const int64_t planes = x[0] * x[1];
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_size = g.out[0] * g.out[1] * g.out[2];
  // a position's offset in its plane: row-major, or column-major over the spatial dims (the missing
  // leading dims have size 1, so their strides change nothing)
  const std::array<int64_t, 3> step = column_major ? std::array<int64_t, 3>{1, g.in[0], g.in[0] * g.in[1]}
                                                   : std::array<int64_t, 3>{g.in[1] * g.in[2], g.in[2], 1};
  auto* ip = static_cast<int64_t*>(args.outputs[1].data);
  dispatch_float(xt.dtype, "max_pool_indices", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(xt.data);
    T* yp = static_cast<T*>(args.outputs[0].data);
    for (int64_t p = 0; p < planes; ++p) {
      const T* src = xp + p * in_size;
      for (int64_t o = 0; o < out_size; ++o) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t where = -1;
        for_each_tap(g, pool_window(g, o), [&](int64_t i0, int64_t i1, int64_t i2) {
          const float v = load(src, (i0 * g.in[1] + i1) * g.in[2] + i2);
          // the first maximum (strictly greater replaces it); the first NaN stays
          if (where < 0 || (!std::isnan(best) && (v > best || std::isnan(v)))) {
            best = v;
            where = i0 * step[0] + i1 * step[1] + i2 * step[2];
          }
        });
        store(yp + p * out_size, o, best);
        ip[p * out_size + o] = where < 0 ? -1 : p * in_size + where;
      }
    }
  });
}

void batch_norm(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& xt = args.inputs[0];
  const Dims x = dims_of(xt);
  const int64_t channels = x[1];
  const int64_t inner = dims_product(x, 2, x.size());
  const int64_t outer = x[0];
  const auto epsilon = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_BATCH_NORM_FLOAT_ATTR_EPSILON]);
  dispatch_float(xt.dtype, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(xt.data);
    const auto* scale = static_cast<const T*>(args.inputs[1].data);
    const auto* bias = static_cast<const T*>(args.inputs[2].data);
    const auto* mean = static_cast<const T*>(args.inputs[3].data);
    const auto* var = static_cast<const T*>(args.inputs[4].data);
    T* yp = static_cast<T*>(args.outputs[0].data);
    for (int64_t c = 0; c < channels; ++c) {
      const float inv = load(scale, c) / std::sqrt(load(var, c) + epsilon);
      const float shift = load(bias, c) - load(mean, c) * inv;
      for (int64_t n = 0; n < outer; ++n) {
        const int64_t base = (n * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) store(yp, base + i, load(xp, base + i) * inv + shift);
      }
    }
  });
}

namespace {

float softplus(float x) {
  // log(1 + exp(x)) without overflow for large x
  return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

float activate(int64_t op, float x, float alpha, float beta) {
  switch (op) {
    case HIPDNN_EP_ACTIVATION_OP_HARD_SIGMOID: return std::max(0.0f, std::min(1.0f, alpha * x + beta));
    case HIPDNN_EP_ACTIVATION_OP_HARD_SWISH: return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
    case HIPDNN_EP_ACTIVATION_OP_LEAKY_RELU: return x < 0.0f ? alpha * x : x;
    case HIPDNN_EP_ACTIVATION_OP_ELU: return x < 0.0f ? alpha * std::expm1(x) : x;
    case HIPDNN_EP_ACTIVATION_OP_SELU: return beta * (x <= 0.0f ? alpha * std::expm1(x) : x);
    case HIPDNN_EP_ACTIVATION_OP_CELU: return std::max(0.0f, x) + std::min(0.0f, alpha * std::expm1(x / alpha));
    case HIPDNN_EP_ACTIVATION_OP_SOFTPLUS: return softplus(x);
    case HIPDNN_EP_ACTIVATION_OP_MISH: return x * std::tanh(softplus(x));
    default: return x > alpha ? x : 0.0f;  // THRESHOLDED_RELU (validated)
  }
}

}  // namespace

void activation(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& xt = args.inputs[0];
  const int64_t op = args.int_attrs[HIPDNN_EP_KERNEL_ACTIVATION_INT_ATTR_OP];
  const auto alpha = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_ACTIVATION_FLOAT_ATTR_ALPHA]);
  const auto beta = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_ACTIVATION_FLOAT_ATTR_BETA]);
  const int64_t n = element_count(xt);
  dispatch_float(xt.dtype, "activation", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(xt.data);
    T* yp = static_cast<T*>(args.outputs[0].data);
    for (int64_t i = 0; i < n; ++i) store(yp, i, activate(op, load(xp, i), alpha, beta));
  });
}

// Resize: per axis a table of each output coordinate's taps (resize_math.h), then per output element
// the sum over the product of its axes' taps (one tap on an axis that keeps its size).
void resize(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  namespace rs = hipdnn_ep::kernels::resize;
  const Dims x = dims_of(args.inputs[0]);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(args.inputs[1].data);
  const int rank = static_cast<int>(x.size());
  int64_t total = 1;
  for (int64_t d : y) total *= d;
  if (total == 0) return;
  const rs::Attrs at{static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_MODE]),
                     static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_COORDINATE_MODE]),
                     static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_NEAREST_MODE]),
                     static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_EXCLUDE_OUTSIDE]),
                     static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_ANTIALIAS]),
                     static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_RESIZE_FLOAT_ATTR_CUBIC_COEFF_A]),
                     static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_RESIZE_FLOAT_ATTR_EXTRAPOLATION_VALUE])};
  std::vector<rs::Axis> axes(rank);
  std::vector<std::vector<rs::Taps>> table(rank);
  std::vector<int64_t> in_stride(rank, 1);
  for (int d = rank - 1; d >= 0; --d) {
    if (d + 1 < rank) in_stride[d] = in_stride[d + 1] * x[d + 1];
    axes[d] = rs::Axis{x[d], y[d], rs::axis_scale(geo[d], x[d], y[d]), rs::bits_to_float(geo[rank + d]),
                       rs::bits_to_float(geo[2 * rank + d])};
    table[d].resize(static_cast<size_t>(y[d]));
    for (int64_t o = 0; o < y[d]; ++o) table[d][o] = rs::axis_taps(at, axes[d], o);
  }
  dispatch_float(args.inputs[0].dtype, "resize", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(args.inputs[0].data);
    T* yp = static_cast<T*>(args.outputs[0].data);
    std::vector<int64_t> pos(rank, 0);
    std::vector<int> j(rank);
    std::vector<const rs::Taps*> taps(rank);
    for (int64_t e = 0; e < total; ++e) {
      bool outside = false;
      for (int d = 0; d < rank; ++d) {
        taps[d] = &table[d][pos[d]];
        outside = outside || taps[d]->outside;
        j[d] = taps[d]->lo;
      }
      float acc = at.extrapolation;
      if (!outside) {
        acc = 0.0f;
        for (;;) {
          float w = 1.0f;
          int64_t off = 0;
          for (int d = 0; d < rank; ++d) {
            w *= rs::tap_weight(at, axes[d], *taps[d], j[d]);
            off += rs::tap_index(axes[d], *taps[d], j[d]) * in_stride[d];
          }
          if (w != 0.0f) acc += w * load(xp, off);
          int d = rank - 1;
          for (; d >= 0; --d) {
            if (++j[d] < taps[d]->hi) break;
            j[d] = taps[d]->lo;
          }
          if (d < 0) break;
        }
      }
      store(yp, e, acc);
      for (int d = rank - 1; d >= 0; --d) {  // next output position
        if (++pos[d] < y[d]) break;
        pos[d] = 0;
      }
    }
  });
}

// GridSample: per output position the taps of each spatial dim (grid_sample_math.h), summed over
// their product for every channel.
void grid_sample(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  namespace gs = hipdnn_ep::kernels::grid_sample;
  const Dims x = dims_of(args.inputs[0]);
  const Dims y = dims_of(args.outputs[0]);
  const int r = static_cast<int>(x.size()) - 2;
  const int mode = static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_MODE]);
  const int padding = static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_PADDING_MODE]);
  const bool align = args.int_attrs[HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_ALIGN_CORNERS] != 0;
  int64_t in_size = 1, out_size = 1;
  for (int d = 0; d < r; ++d) {
    in_size *= x[2 + d];
    out_size *= y[2 + d];
  }
  if (x[0] == 0 || x[1] == 0 || out_size == 0) return;
  std::array<int64_t, gs::kMaxSpatial> in_stride{};
  for (int d = r - 1, s = 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= static_cast<int>(x[2 + d]);
  }
  dispatch_float(args.inputs[0].dtype, "grid_sample", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(args.inputs[0].data);
    const T* gp = static_cast<const T*>(args.inputs[1].data);
    T* yp = static_cast<T*>(args.outputs[0].data);
    std::array<gs::Taps, gs::kMaxSpatial> taps{};
    std::array<int, gs::kMaxSpatial> j{};
    for (int64_t n = 0; n < x[0]; ++n) {
      for (int64_t o = 0; o < out_size; ++o) {
        const int64_t goff = (n * out_size + o) * r;
        for (int d = 0; d < r; ++d) {  // the grid's last dim lists x (the last spatial dim) first
          const float c = gs::source_coordinate(load(gp, goff + (r - 1 - d)), x[2 + d], mode, padding, align);
          taps[d] = gs::dim_taps(c, mode);
        }
        for (int64_t c = 0; c < x[1]; ++c) {
          const T* plane = xp + (n * x[1] + c) * in_size;
          float acc = 0.0f;
          j.fill(0);
          for (;;) {
            float w = 1.0f;
            int64_t off = 0;
            bool zero = false;
            for (int d = 0; d < r; ++d) {
              const int64_t i = gs::tap_index(taps[d].first + j[d], x[2 + d], padding, align);
              zero = zero || i < 0;
              w *= taps[d].weight[j[d]];
              off += i * in_stride[d];
            }
            if (!zero && w != 0.0f) acc += w * load(plane, off);
            int d = r - 1;
            for (; d >= 0; --d) {
              if (++j[d] < taps[d].count) break;
              j[d] = 0;
            }
            if (d < 0) break;
          }
          store(yp, (n * x[1] + c) * out_size + o, acc);
        }
      }
    }
  });
}

}  // namespace hipdnn_ep::kernels::cpu
