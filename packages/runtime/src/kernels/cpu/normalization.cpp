// CPU normalization kernels: softmax along one axis, LayerNormalization and RMS normalization
// (with the skip sum). All compute in float whatever the storage dtype.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

// The f32x8 templates are inlined into AVX2 functions only (see vec_math.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace hipdnn_ep::kernels::cpu {
namespace {

// Softmax over rows of `len` contiguous elements (the axis is the last dim),
// a vector of lanes at a time. The maximum ignores NaN like std::fmax; a NaN
// element then makes its whole row NaN through the sum, as in the general path.
// One float row of whole vectors (len a multiple of the width), read from x
// and written to y directly; the same operations as the buffered path below.
template <typename V>
HIPDNN_EP_VEC_INLINE void softmax_row_in_place(const float* x, float* y, int64_t len) {
  constexpr int64_t kWidth = vec::width<V>;
  V max0 = vec::splat<V>(-std::numeric_limits<float>::infinity());
  V max1 = max0;
  int64_t i = 0;
  for (; i + 2 * kWidth <= len; i += 2 * kWidth) {
    const V v0 = vec::load<V>(x + i);
    const V v1 = vec::load<V>(x + i + kWidth);
    max0 = v0 > max0 ? v0 : max0;
    max1 = v1 > max1 ? v1 : max1;
  }
  if (i < len) {
    const V v0 = vec::load<V>(x + i);
    max0 = v0 > max0 ? v0 : max0;
  }
  max0 = max1 > max0 ? max1 : max0;
  const V m = vec::splat<V>(vec::max(max0));
  V sum = vec::splat<V>(0.0f);
  for (i = 0; i < len; i += kWidth) {
    const V e = vec::exp(vec::load<V>(x + i) - m);
    sum += e;
    vec::store(y + i, e);
  }
  const V inverse = vec::splat<V>(1.0f / vec::sum(sum));
  for (i = 0; i < len; i += kWidth) vec::store(y + i, vec::load<V>(y + i) * inverse);
}

template <typename V, typename T>
HIPDNN_EP_VEC_INLINE void softmax_rows(const T* x, T* y, int64_t rows, int64_t len) {
  constexpr int64_t kWidth = vec::width<V>;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t padded = (len + kWidth - 1) / kWidth * kWidth;
  // Lanes past the end hold -inf: they never raise the maximum, and their exp() is zeroed below.
  std::vector<float> row(static_cast<size_t>(padded), kNegInf);
  for (int64_t o = 0; o < rows; ++o) {
    const int64_t base = o * len;
    if constexpr (std::is_same_v<T, float>) {
      if (padded == len) {  // whole vectors: no buffer needed
        softmax_row_in_place<V>(x + base, y + base, len);
        continue;
      }
      std::memcpy(row.data(), x + base, static_cast<size_t>(len) * sizeof(float));
    } else {
      for (int64_t i = 0; i < len; ++i) row[i] = load(x, base + i);
    }
    // Two running maxima break the dependency chain; `v > m ? v : m` keeps m for NaN.
    V max0 = vec::splat<V>(kNegInf);
    V max1 = max0;
    int64_t i = 0;
    for (; i + 2 * kWidth <= padded; i += 2 * kWidth) {
      const V v0 = vec::load<V>(&row[i]);
      const V v1 = vec::load<V>(&row[i + kWidth]);
      max0 = v0 > max0 ? v0 : max0;
      max1 = v1 > max1 ? v1 : max1;
    }
    if (i < padded) {
      const V v0 = vec::load<V>(&row[i]);
      max0 = v0 > max0 ? v0 : max0;
    }
    max0 = max1 > max0 ? max1 : max0;
    // Subtracting the maximum keeps exp() in (0, 1]: no overflow. A row of
    // -inf (all masked) gives -inf - -inf = NaN, as the general path does.
    const V m = vec::splat<V>(vec::max(max0));
    V sum = vec::splat<V>(0.0f);
    for (i = 0; i < padded; i += kWidth) {
      V e = vec::exp(vec::load<V>(&row[i]) - m);
      if (i + kWidth > len) {  // the padding lanes: exp(-inf - m) is 0 unless m is -inf or NaN
        for (int64_t lane = len - i; lane < kWidth; ++lane) e[lane] = 0.0f;
      }
      sum += e;
      vec::store(&row[i], e);
    }
    const V inverse = vec::splat<V>(1.0f / vec::sum(sum));
    for (i = 0; i < padded; i += kWidth) vec::store(&row[i], vec::load<V>(&row[i]) * inverse);
    if constexpr (std::is_same_v<T, float>) {
      std::memcpy(y + base, row.data(), static_cast<size_t>(len) * sizeof(float));
    } else {
      for (i = 0; i < len; ++i) store(y, base + i, row[i]);
    }
    std::fill(row.begin() + len, row.end(), kNegInf);  // restore the padding for the next row
  }
}

#if HIPDNN_EP_VEC_AVX2
template <typename T>
HIPDNN_EP_TARGET_AVX2 void softmax_rows_avx2(const T* x, T* y, int64_t rows, int64_t len) {
  softmax_rows<vec::f32x8>(x, y, rows, len);
}
#endif

// Eight lanes where the CPU has AVX2, else four. The lane count changes the
// order of the row's sum, so results may differ by an ulp between such CPUs.
template <typename T>
void softmax_rows_any(const T* x, T* y, int64_t rows, int64_t len) {
#if HIPDNN_EP_VEC_AVX2
  if (vec::has_avx2()) return softmax_rows_avx2(x, y, rows, len);
#endif
  softmax_rows<vec::f32x4>(x, y, rows, len);
}

// Softmax of x viewed as [outer, axis_len, inner] along the middle dim. All
// `inner` columns of one outer slice are processed together so that every
// pass reads memory contiguously.
template <typename T>
void softmax_typed(const T* x, T* y, int64_t outer, int64_t axis_len, int64_t inner) {
  if (inner == 1) return softmax_rows_any(x, y, outer, axis_len);
  std::vector<float> maxima(static_cast<size_t>(inner));
  std::vector<float> sums(static_cast<size_t>(inner));
  std::vector<float> exps(static_cast<size_t>(axis_len * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * axis_len * inner;
    std::fill(maxima.begin(), maxima.end(), -std::numeric_limits<float>::infinity());
    std::fill(sums.begin(), sums.end(), 0.0f);
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) maxima[i] = std::fmax(maxima[i], load(x, base + a * inner + i));
    }
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) {
        // Subtracting the maximum keeps exp() in (0, 1]: no overflow.
        const float e = std::exp(load(x, base + a * inner + i) - maxima[i]);
        exps[a * inner + i] = e;
        sums[i] += e;
      }
    }
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) store(y, base + a * inner + i, exps[a * inner + i] / sums[i]);
    }
  }
}

// FLOAT64 softmax, computed in double (onnxruntime's double Softmax does): the same passes as
// softmax_typed's general path, one column set at a time.
void softmax_double(const double* x, double* y, int64_t outer, int64_t axis_len, int64_t inner) {
  std::vector<double> maxima(static_cast<size_t>(inner));
  std::vector<double> sums(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * axis_len * inner;
    std::fill(maxima.begin(), maxima.end(), -std::numeric_limits<double>::infinity());
    std::fill(sums.begin(), sums.end(), 0.0);
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) maxima[i] = std::fmax(maxima[i], x[base + a * inner + i]);
    }
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) {
        const double e = std::exp(x[base + a * inner + i] - maxima[i]);
        y[base + a * inner + i] = e;
        sums[i] += e;
      }
    }
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) y[base + a * inner + i] /= sums[i];
    }
  }
}

// The value of an optional parameter tensor (Scale or B) broadcast over the
// normalized dims, as a dense float vector of `size` entries.
std::vector<float> broadcast_param(const hipdnn_ep_tensor_ref_t& t, const Dims& normalized, float absent_value) {
  std::vector<float> values(static_cast<size_t>(element_count(normalized)), absent_value);
  if (!is_present(t)) return values;
  const std::array<Dims, 2> strides{contiguous_strides(normalized), broadcast_strides(dims_of(t), normalized)};
  dispatch_float(t.dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(t.data);
    for_each_row<2>(normalized, strides, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
      for (int64_t i = 0; i < n; ++i) values[off[0] + i * st[0]] = load(src, off[1] + i * st[1]);
    });
  });
  return values;
}

// ---------------------------------------------------------------- RMS norm, skip layer norm

// RMS normalization (center false) or layer normalization (true) of X + Skip + Bias over dims [axis,
// rank): Scale at input 1, Skip, Bias and B (centering only) at the given inputs (below 0: the
// kernel has none); output 1, when present, gets the sum. Sums in double.
template <typename T>
void norm_typed(const hipdnn_ep_kernel_args_t& args, size_t axis, float epsilon, bool center, int32_t skip_at,
                int32_t bias_at, int32_t beta_at) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const Dims normalized(dims.begin() + static_cast<std::ptrdiff_t>(axis), dims.end());
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t size = element_count(normalized);
  // Parameters broadcast to dense float vectors (Scale, B, Bias over the normalized dims; Skip over X).
  auto dense = [&](int32_t index, const Dims& target) {
    std::vector<float> values;
    if (index < 0 || index >= args.n_inputs || !is_present(args.inputs[index])) return values;
    const hipdnn_ep_tensor_ref_t& t = args.inputs[index];
    values.assign(static_cast<size_t>(element_count(target)), 0.0f);
    const std::array<Dims, 2> strides{contiguous_strides(target), broadcast_strides(dims_of(t), target)};
    const T* src = static_cast<const T*>(t.data);
    for_each_row<2>(target, strides, [&](const std::array<int64_t, 2>& off, int64_t count, const std::array<int64_t, 2>& st) {
      for (int64_t i = 0; i < count; ++i) values[off[0] + i * st[0]] = load(src, off[1] + i * st[1]);
    });
    return values;
  };
  const std::vector<float> scale = dense(1, normalized);
  const std::vector<float> skip = dense(skip_at, dims);
  const std::vector<float> bias = dense(bias_at, normalized);
  const std::vector<float> beta = dense(beta_at, normalized);
  const T* x = static_cast<const T*>(in.data);
  T* y = static_cast<T*>(args.outputs[0].data);
  T* sum_out = args.n_outputs > 1 ? static_cast<T*>(args.outputs[1].data) : nullptr;
  std::vector<float> row(static_cast<size_t>(size));
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * size;
    double sum = 0.0;
    for (int64_t i = 0; i < size; ++i) {
      float v = load(x, base + i);
      if (!skip.empty()) v += skip[base + i];
      if (!bias.empty()) v += bias[i];
      row[i] = v;
      sum += v;
      if (sum_out != nullptr) store(sum_out, base + i, v);
    }
    const double mean = center ? sum / static_cast<double>(size) : 0.0;
    double squares = 0.0;
    for (int64_t i = 0; i < size; ++i) squares += (row[i] - mean) * (row[i] - mean);
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(size) + epsilon);
    for (int64_t i = 0; i < size; ++i) {
      const double b = beta.empty() ? 0.0 : beta[i];
      store(y, base + i, static_cast<float>((row[i] - mean) * inv * scale[i] + b));
    }
  }
}

}  // namespace

void softmax(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_SOFTMAX_INT_ATTR_AXIS]);
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  if (element_count(dims) == 0) return;
  if (in.dtype == HIPDNN_EP_DTYPE_FLOAT64) {
    return softmax_double(static_cast<const double*>(in.data), static_cast<double*>(args.outputs[0].data), outer,
                          dims[axis], inner);
  }
  dispatch_float(in.dtype, "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_typed(static_cast<const T*>(in.data), static_cast<T*>(args.outputs[0].data), outer, dims[axis], inner);
  });
}

void layer_norm(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_LAYER_NORM_INT_ATTR_AXIS]);
  const auto epsilon = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_LAYER_NORM_FLOAT_ATTR_EPSILON]);
  const Dims normalized(dims.begin() + static_cast<std::ptrdiff_t>(axis), dims.end());
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t size = element_count(normalized);
  if (outer == 0 || size == 0) return;
  const std::vector<float> scale = broadcast_param(args.inputs[1], normalized, 1.0f);
  const hipdnn_ep_tensor_ref_t absent{nullptr, nullptr, -1, in.dtype};
  const std::vector<float> bias = broadcast_param(args.n_inputs > 2 ? args.inputs[2] : absent, normalized, 0.0f);
  dispatch_float(in.dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in.data);
    T* y = static_cast<T*>(args.outputs[0].data);
    std::vector<float> row(static_cast<size_t>(size));
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t base = o * size;
      // Two passes (mean, then squared deviations) in float: stable enough
      // for inputs with a large mean, unlike E[x^2] - E[x]^2.
      float sum = 0.0f;
      for (int64_t i = 0; i < size; ++i) {
        row[i] = load(x, base + i);
        sum += row[i];
      }
      const float mean = sum / static_cast<float>(size);
      float squares = 0.0f;
      for (int64_t i = 0; i < size; ++i) {
        const float d = row[i] - mean;
        squares += d * d;
      }
      const float inv_std = 1.0f / std::sqrt(squares / static_cast<float>(size) + epsilon);
      for (int64_t i = 0; i < size; ++i) store(y, base + i, (row[i] - mean) * inv_std * scale[i] + bias[i]);
    }
  });
}

void rms_norm(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_RMS_NORM_INT_ATTR_AXIS]);
  const auto epsilon = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_RMS_NORM_FLOAT_ATTR_EPSILON]);
  if (element_count(args.inputs[0]) == 0) return;
  dispatch_float(args.inputs[0].dtype, "rms_norm", [&](auto tag) {
    norm_typed<typename decltype(tag)::type>(args, axis, epsilon, false, 2, 3, -1);
  });
}

void skip_layer_norm(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_SKIP_LAYER_NORM_INT_ATTR_AXIS]);
  const auto epsilon = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_SKIP_LAYER_NORM_FLOAT_ATTR_EPSILON]);
  if (element_count(args.inputs[0]) == 0) return;
  dispatch_float(args.inputs[0].dtype, "skip_layer_norm", [&](auto tag) {
    norm_typed<typename decltype(tag)::type>(args, axis, epsilon, true, 3, 4, 2);
  });
}

}  // namespace hipdnn_ep::kernels::cpu
