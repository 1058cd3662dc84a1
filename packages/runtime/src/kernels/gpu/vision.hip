// GPU kernels of the vision family besides convolution: pooling (one thread per output element),
// inference-mode batch normalization and the parametric activations (grid-stride elementwise).
// All compute in float whatever the storage dtype, with the CPU backend's formulas.
#include <cmath>

#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/grid_sample_math.h"
#include "kernels/resize_math.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

// A pooling window's geometry, the spatial dims padded to three (missing ones of size 1).
struct PoolParams {
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], pad_end[3], dilation[3];
};

template <typename T>
__global__ void pool_kernel(const T* x, T* y, PoolParams g, int64_t planes, bool is_max, bool include_pad) {
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_size = g.out[0] * g.out[1] * g.out[2];
  HIPDNN_EP_GRID_STRIDE(e, planes * out_size) {
    const int64_t plane = e / out_size;
    const int64_t o = e % out_size;
    const int64_t pos[3] = {o / (g.out[1] * g.out[2]), (o / g.out[2]) % g.out[1], o % g.out[2]};
    int64_t lo[3], hi[3];
    int64_t padded = 1;  // taps inside X and its pads (count_include_pad's divisor)
    for (int d = 0; d < 3; ++d) {
      const int64_t start = pos[d] * g.stride[d] - g.pad[d];
      int64_t in_pads = 0;
      lo[d] = g.kernel[d];
      hi[d] = 0;
      for (int64_t t = 0; t < g.kernel[d]; ++t) {
        const int64_t i = start + t * g.dilation[d];
        if (i < g.in[d] + g.pad_end[d]) ++in_pads;
        if (i >= 0 && i < g.in[d]) {
          lo[d] = t < lo[d] ? t : lo[d];
          hi[d] = t + 1;
        }
      }
      padded *= in_pads;
    }
    const T* src = x + plane * in_size;
    float best = -INFINITY;
    float sum = 0.0f;
    int64_t inside = 0;
    for (int64_t a = lo[0]; a < hi[0]; ++a) {
      const int64_t i0 = pos[0] * g.stride[0] - g.pad[0] + a * g.dilation[0];
      for (int64_t b = lo[1]; b < hi[1]; ++b) {
        const int64_t i1 = pos[1] * g.stride[1] - g.pad[1] + b * g.dilation[1];
        for (int64_t c = lo[2]; c < hi[2]; ++c) {
          const int64_t i2 = pos[2] * g.stride[2] - g.pad[2] + c * g.dilation[2];
          const float v = load(src, (i0 * g.in[1] + i1) * g.in[2] + i2);
          best = v > best || isnan(v) ? v : best;
          sum += v;
          ++inside;
        }
      }
    }
    float value = best;
    if (!is_max) {
      const int64_t divisor = include_pad ? padded : inside;
      value = divisor > 0 ? sum / static_cast<float>(divisor) : NAN;
    }
    store(y, e, value);
  }
}

template <typename T>
__global__ void batch_norm_kernel(const T* x, const T* scale, const T* bias, const T* mean, const T* var, T* y,
                                  int64_t n, int64_t channels, int64_t inner, float epsilon) {
  HIPDNN_EP_GRID_STRIDE(i, n) {
    const int64_t c = (i / inner) % channels;
    const float inv = load(scale, c) / sqrtf(load(var, c) + epsilon);
    const float shift = load(bias, c) - load(mean, c) * inv;
    store(y, i, load(x, i) * inv + shift);
  }
}

__device__ __forceinline__ float softplus(float x) {
  return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

__device__ __forceinline__ float activate(int64_t op, float x, float alpha, float beta) {
  switch (op) {
    case HIPDNN_EP_ACTIVATION_OP_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
    case HIPDNN_EP_ACTIVATION_OP_HARD_SWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    case HIPDNN_EP_ACTIVATION_OP_LEAKY_RELU: return x < 0.0f ? alpha * x : x;
    case HIPDNN_EP_ACTIVATION_OP_ELU: return x < 0.0f ? alpha * expm1f(x) : x;
    case HIPDNN_EP_ACTIVATION_OP_SELU: return beta * (x <= 0.0f ? alpha * expm1f(x) : x);
    case HIPDNN_EP_ACTIVATION_OP_CELU: return fmaxf(0.0f, x) + fminf(0.0f, alpha * expm1f(x / alpha));
    case HIPDNN_EP_ACTIVATION_OP_SOFTPLUS: return softplus(x);
    case HIPDNN_EP_ACTIVATION_OP_MISH: return x * tanhf(softplus(x));
    default: return x > alpha ? x : 0.0f;  // THRESHOLDED_RELU (validated)
  }
}

template <typename T>
__global__ void activation_kernel(const T* x, T* y, int64_t n, int64_t op, float alpha, float beta) {
  HIPDNN_EP_GRID_STRIDE(i, n) { store(y, i, activate(op, load(x, i), alpha, beta)); }
}

// MaxPool with its Indices: the first maximum in window order (the first NaN stays), its flat index
// into X (spatial offset row-major, or column-major with `step` so), as the CPU backend.
template <typename T>
__global__ void max_pool_indices_kernel(const T* x, T* y, int64_t* indices, PoolParams g, int64_t planes, int64_t step0,
                                        int64_t step1, int64_t step2) {
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_size = g.out[0] * g.out[1] * g.out[2];
  HIPDNN_EP_GRID_STRIDE(e, planes * out_size) {
    const int64_t plane = e / out_size;
    const int64_t o = e % out_size;
    const int64_t pos[3] = {o / (g.out[1] * g.out[2]), (o / g.out[2]) % g.out[1], o % g.out[2]};
    int64_t first[3], lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      first[d] = pos[d] * g.stride[d] - g.pad[d];
      lo[d] = g.kernel[d];
      hi[d] = 0;
      for (int64_t t = 0; t < g.kernel[d]; ++t) {
        const int64_t i = first[d] + t * g.dilation[d];
        if (i >= 0 && i < g.in[d]) {
          lo[d] = t < lo[d] ? t : lo[d];
          hi[d] = t + 1;
        }
      }
    }
    const T* src = x + plane * in_size;
    float best = -INFINITY;
    int64_t where = -1;
    for (int64_t a = lo[0]; a < hi[0]; ++a) {
      const int64_t i0 = first[0] + a * g.dilation[0];
      for (int64_t b = lo[1]; b < hi[1]; ++b) {
        const int64_t i1 = first[1] + b * g.dilation[1];
        for (int64_t c = lo[2]; c < hi[2]; ++c) {
          const int64_t i2 = first[2] + c * g.dilation[2];
          const float v = load(src, (i0 * g.in[1] + i1) * g.in[2] + i2);
          if (where < 0 || (!isnan(best) && (v > best || isnan(v)))) {
            best = v;
            where = i0 * step0 + i1 * step1 + i2 * step2;
          }
        }
      }
    }
    store(y, e, best);
    indices[e] = where < 0 ? -1 : plane * in_size + where;
  }
}

PoolParams pool_params(const hipdnn_ep_kernel_args_t& args) {
  const Dims x = dims_of(args.inputs[0]);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(args.inputs[1].data);  // host memory
  const size_t r = x.size() - 2;
  PoolParams g{};
  for (int d = 0; d < 3; ++d) {
    g.in[d] = g.out[d] = g.kernel[d] = g.stride[d] = g.dilation[d] = 1;
    g.pad[d] = g.pad_end[d] = 0;
  }
  const size_t first = 3 - r;
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

}  // namespace

void max_pool_indices(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const Dims x = dims_of(args.inputs[0]);
  const int64_t n = element_count(args.outputs[0]);
  if (n == 0) return;
  const PoolParams g = pool_params(args);
  const bool column_major = args.int_attrs[HIPDNN_EP_KERNEL_MAX_POOL_INDICES_INT_ATTR_STORAGE_ORDER] != 0;
  const int64_t step0 = column_major ? 1 : g.in[1] * g.in[2];
  const int64_t step1 = column_major ? g.in[0] : g.in[2];
  const int64_t step2 = column_major ? g.in[0] * g.in[1] : 1;
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "max_pool_indices", [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_indices_kernel<<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<const T*>(args.inputs[0].data), static_cast<T*>(args.outputs[0].data),
        static_cast<int64_t*>(args.outputs[1].data), g, x[0] * x[1], step0, step1, step2);
  });
  check_launch("max_pool_indices");
}

void pool(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const Dims x = dims_of(args.inputs[0]);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(args.inputs[1].data);  // host memory
  const size_t r = x.size() - 2;
  PoolParams g{};
  for (int d = 0; d < 3; ++d) {
    g.in[d] = g.out[d] = g.kernel[d] = g.stride[d] = g.dilation[d] = 1;
    g.pad[d] = g.pad_end[d] = 0;
  }
  const size_t first = 3 - r;
  for (size_t d = 0; d < r; ++d) {
    g.in[first + d] = x[2 + d];
    g.out[first + d] = y[2 + d];
    g.kernel[first + d] = geo[d];
    g.stride[first + d] = geo[r + d];
    g.pad[first + d] = geo[2 * r + d];
    g.pad_end[first + d] = geo[3 * r + d];
    g.dilation[first + d] = geo[4 * r + d];
  }
  const int64_t n = element_count(y);
  if (n == 0) return;
  const bool is_max = args.int_attrs[HIPDNN_EP_KERNEL_POOL_INT_ATTR_OP] == HIPDNN_EP_POOL_OP_MAX;
  const bool include_pad = args.int_attrs[HIPDNN_EP_KERNEL_POOL_INT_ATTR_COUNT_INCLUDE_PAD] != 0;
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    pool_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(args.inputs[0].data),
                                                   static_cast<T*>(args.outputs[0].data), g, x[0] * x[1], is_max,
                                                   include_pad);
  });
  check_launch("pool");
}

void batch_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const Dims x = dims_of(args.inputs[0]);
  const int64_t n = element_count(x);
  if (n == 0) return;
  const auto epsilon = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_BATCH_NORM_FLOAT_ATTR_EPSILON]);
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto in = [&](int i) { return static_cast<const T*>(args.inputs[i].data); };
    batch_norm_kernel<<<grid_for(n), kBlock, 0, stream>>>(in(0), in(1), in(2), in(3), in(4),
                                                         static_cast<T*>(args.outputs[0].data), n, x[1],
                                                         dims_product(x, 2, x.size()), epsilon);
  });
  check_launch("batch_norm");
}

void activation(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const int64_t n = element_count(args.inputs[0]);
  if (n == 0) return;
  const int64_t op = args.int_attrs[HIPDNN_EP_KERNEL_ACTIVATION_INT_ATTR_OP];
  const auto alpha = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_ACTIVATION_FLOAT_ATTR_ALPHA]);
  const auto beta = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_ACTIVATION_FLOAT_ATTR_BETA]);
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "activation", [&](auto tag) {
    using T = typename decltype(tag)::type;
    activation_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(args.inputs[0].data),
                                                         static_cast<T*>(args.outputs[0].data), n, op, alpha, beta);
  });
  check_launch("activation");
}

// Resize: one thread per output element computes its taps along every axis (resize_math.h, the CPU
// backend's functions) and sums over their product.
namespace {

struct ResizeParams {
  hipdnn_ep::kernels::resize::Axis axes[hipdnn_ep::kernels::resize::kMaxRank];
  int64_t in_stride[hipdnn_ep::kernels::resize::kMaxRank];
  int rank;
};

template <typename T>
__global__ void resize_kernel(const T* x, T* y, ResizeParams p, hipdnn_ep::kernels::resize::Attrs at, int64_t total) {
  namespace rs = hipdnn_ep::kernels::resize;
  HIPDNN_EP_GRID_STRIDE(e, total) {
    rs::Taps taps[rs::kMaxRank];
    int j[rs::kMaxRank];
    bool outside = false;
    int64_t rest = e;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rest % p.axes[d].out;
      rest /= p.axes[d].out;
      taps[d] = rs::axis_taps(at, p.axes[d], o);
      outside = outside || taps[d].outside;
      j[d] = taps[d].lo;
    }
    float acc = at.extrapolation;
    if (!outside) {
      acc = 0.0f;
      for (;;) {
        float w = 1.0f;
        int64_t off = 0;
        for (int d = 0; d < p.rank; ++d) {
          w *= rs::tap_weight(at, p.axes[d], taps[d], j[d]);
          off += rs::tap_index(p.axes[d], taps[d], j[d]) * p.in_stride[d];
        }
        if (w != 0.0f) acc += w * load(x, off);
        int d = p.rank - 1;
        for (; d >= 0; --d) {
          if (++j[d] < taps[d].hi) break;
          j[d] = taps[d].lo;
        }
        if (d < 0) break;
      }
    }
    store(y, e, acc);
  }
}

}  // namespace

void resize(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  namespace rs = hipdnn_ep::kernels::resize;
  const Dims x = dims_of(args.inputs[0]);
  const Dims y = dims_of(args.outputs[0]);
  const auto* geo = static_cast<const int64_t*>(args.inputs[1].data);  // host memory
  const int rank = static_cast<int>(x.size());
  const int64_t total = element_count(args.outputs[0]);
  if (total == 0) return;
  const rs::Attrs at{static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_MODE]),
                     static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_COORDINATE_MODE]),
                     static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_NEAREST_MODE]),
                     static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_EXCLUDE_OUTSIDE]),
                     static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_RESIZE_INT_ATTR_ANTIALIAS]),
                     static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_RESIZE_FLOAT_ATTR_CUBIC_COEFF_A]),
                     static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_RESIZE_FLOAT_ATTR_EXTRAPOLATION_VALUE])};
  ResizeParams p{};
  p.rank = rank;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    p.in_stride[d] = stride;
    stride *= x[d];
    p.axes[d] = rs::Axis{x[d], y[d], rs::axis_scale(geo[d], x[d], y[d]), rs::bits_to_float(geo[rank + d]),
                         rs::bits_to_float(geo[2 * rank + d])};
  }
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "resize", [&](auto tag) {
    using T = typename decltype(tag)::type;
    resize_kernel<T><<<grid_for(total), kBlock, 0, stream>>>(static_cast<const T*>(args.inputs[0].data),
                                                             static_cast<T*>(args.outputs[0].data), p, at, total);
  });
  check_launch("resize");
}

// GridSample: one thread per output element (image, channel, position), the CPU backend's math.
namespace {

struct GridSampleParams {
  int64_t in[hipdnn_ep::kernels::grid_sample::kMaxSpatial];
  int64_t in_stride[hipdnn_ep::kernels::grid_sample::kMaxSpatial];
  int64_t channels, in_size, out_size;
  int r, mode, padding;
  bool align;
};

template <typename T>
__global__ void grid_sample_kernel(const T* x, const T* grid, T* y, GridSampleParams p, int64_t total) {
  namespace gs = hipdnn_ep::kernels::grid_sample;
  HIPDNN_EP_GRID_STRIDE(e, total) {
    const int64_t o = e % p.out_size;
    const int64_t c = (e / p.out_size) % p.channels;
    const int64_t n = e / (p.out_size * p.channels);
    gs::Taps taps[gs::kMaxSpatial];
    int j[gs::kMaxSpatial];
    const int64_t goff = (n * p.out_size + o) * p.r;
    for (int d = 0; d < p.r; ++d) {
      const float cd = gs::source_coordinate(load(grid, goff + (p.r - 1 - d)), p.in[d], p.mode, p.padding, p.align);
      taps[d] = gs::dim_taps(cd, p.mode);
      j[d] = 0;
    }
    const T* plane = x + (n * p.channels + c) * p.in_size;
    float acc = 0.0f;
    for (;;) {
      float w = 1.0f;
      int64_t off = 0;
      bool zero = false;
      for (int d = 0; d < p.r; ++d) {
        const int64_t i = gs::tap_index(taps[d].first + j[d], p.in[d], p.padding, p.align);
        zero = zero || i < 0;
        w *= taps[d].weight[j[d]];
        off += i * p.in_stride[d];
      }
      if (!zero && w != 0.0f) acc += w * load(plane, off);
      int d = p.r - 1;
      for (; d >= 0; --d) {
        if (++j[d] < taps[d].count) break;
        j[d] = 0;
      }
      if (d < 0) break;
    }
    store(y, e, acc);
  }
}

}  // namespace

void grid_sample(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const Dims x = dims_of(args.inputs[0]);
  const Dims y = dims_of(args.outputs[0]);
  GridSampleParams p{};
  p.r = static_cast<int>(x.size()) - 2;
  p.mode = static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_MODE]);
  p.padding = static_cast<int>(args.int_attrs[HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_PADDING_MODE]);
  p.align = args.int_attrs[HIPDNN_EP_KERNEL_GRID_SAMPLE_INT_ATTR_ALIGN_CORNERS] != 0;
  p.channels = x[1];
  p.in_size = 1;
  p.out_size = 1;
  for (int d = p.r - 1; d >= 0; --d) {
    p.in[d] = x[2 + d];
    p.in_stride[d] = p.in_size;
    p.in_size *= x[2 + d];
    p.out_size *= y[2 + d];
  }
  const int64_t total = element_count(args.outputs[0]);
  if (total == 0) return;
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(args.inputs[0].dtype, "grid_sample", [&](auto tag) {
    using T = typename decltype(tag)::type;
    grid_sample_kernel<T><<<grid_for(total), kBlock, 0, stream>>>(static_cast<const T*>(args.inputs[0].data),
                                                                  static_cast<const T*>(args.inputs[1].data),
                                                                  static_cast<T*>(args.outputs[0].data), p, total);
  });
  check_launch("grid_sample");
}

}  // namespace hipdnn_ep::kernels::gpu
