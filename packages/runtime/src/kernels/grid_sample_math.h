// ONNX GridSample's sampling of one output position, shared by the CPU and GPU backends (host and
// device functions): the grid's normalized coordinates are denormalized per spatial dim, border and
// reflection padding move them inside X (not for cubic), and nearest, linear or cubic taps (padding applied again to
// each tap's index) are combined over the spatial dims. Computes in float; coordinates are clamped to
// +-1e7 first, so a NaN or infinite grid value never becomes an out-of-range integer.
#ifndef HIPDNN_EP_KERNELS_GRID_SAMPLE_MATH_H_
#define HIPDNN_EP_KERNELS_GRID_SAMPLE_MATH_H_

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HIPDNN_EP_GS_HD __host__ __device__
#else
#define HIPDNN_EP_GS_HD
#endif

namespace hipdnn_ep::kernels::grid_sample {

constexpr int kMaxSpatial = 3;
enum Mode { kLinear = 0, kNearest = 1, kCubic = 2 };
enum Padding { kZeros = 0, kBorder = 1, kReflection = 2 };

HIPDNN_EP_GS_HD inline float reflect(float x, float lo, float hi) {
  const float range = hi - lo;
  if (!(range > 0.0f)) return lo < 0.0f ? 0.0f : lo;
  if (x < lo) {
    const float dx = lo - x;
    const float n = floorf(dx / range);
    const float r = dx - n * range;
    return static_cast<int64_t>(n) % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const float dx = x - hi;
    const float n = floorf(dx / range);
    const float r = dx - n * range;
    return static_cast<int64_t>(n) % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// The input coordinate of a normalized grid value along a dim of `size`, padding applied (except for
// cubic, which pads each tap's index only, as onnxruntime does).
HIPDNN_EP_GS_HD inline float source_coordinate(float g, int64_t size, int mode, int padding, bool align_corners) {
  const float s = static_cast<float>(size);
  float x = align_corners ? (g + 1.0f) / 2.0f * (s - 1.0f) : ((g + 1.0f) * s - 1.0f) / 2.0f;
  x = fminf(fmaxf(x, -1e7f), 1e7f);  // also NaN -> -1e7
  if (mode == kCubic) return x;
  if (padding == kBorder) {
    x = fminf(fmaxf(x, 0.0f), s - 1.0f);
  } else if (padding == kReflection) {
    x = align_corners ? reflect(x, 0.0f, s - 1.0f) : reflect(x, -0.5f, s - 0.5f);
  }
  return x;
}

// A tap's index inside X, or -1 when it reads the zero padding.
HIPDNN_EP_GS_HD inline int64_t tap_index(int64_t i, int64_t size, int padding, bool align_corners) {
  if (padding == kZeros) return i >= 0 && i < size ? i : -1;
  if (padding == kBorder) return i < 0 ? 0 : (i >= size ? size - 1 : i);
  const float r = align_corners ? reflect(static_cast<float>(i), 0.0f, static_cast<float>(size - 1))
                                : reflect(static_cast<float>(i), -0.5f, static_cast<float>(size) - 0.5f);
  const int64_t k = static_cast<int64_t>(r);
  return k < 0 ? 0 : (k >= size ? size - 1 : k);
}

HIPDNN_EP_GS_HD inline float cubic_coefficient(float d) {
  const float a = -0.75f;
  d = fabsf(d);
  if (d <= 1.0f) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2.0f) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0.0f;
}

// Taps of one spatial dim: indices first + j (j < count) with weights.
struct Taps {
  int64_t first;
  int count;
  float weight[4];
};

HIPDNN_EP_GS_HD inline Taps dim_taps(float x, int mode) {
  Taps t{};
  if (mode == kNearest) {
    t.first = static_cast<int64_t>(rintf(x));  // round half to even, as onnxruntime's nearbyint
    t.count = 1;
    t.weight[0] = 1.0f;
  } else if (mode == kLinear) {
    const float f = floorf(x);
    const float w = x - f;
    t.first = static_cast<int64_t>(f);
    t.count = 2;
    t.weight[0] = 1.0f - w;
    t.weight[1] = w;
  } else {
    const float f = floorf(x);
    const float w = x - f;
    t.first = static_cast<int64_t>(f) - 1;
    t.count = 4;
    for (int j = 0; j < 4; ++j) t.weight[j] = cubic_coefficient(w - static_cast<float>(j - 1));
  }
  return t;
}

}  // namespace hipdnn_ep::kernels::grid_sample

#endif  // HIPDNN_EP_KERNELS_GRID_SAMPLE_MATH_H_
