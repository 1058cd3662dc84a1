// The coordinate mapping and interpolation taps of ONNX Resize, shared by the CPU and GPU backends
// (host and device functions): per axis, an output coordinate maps to an input coordinate (the
// coordinate transformation mode), which nearest rounds to one input index and linear and cubic turn
// into taps base + j, j in [lo, hi), with weights. Computed in float, as onnxruntime does.
#ifndef HIPDNN_EP_KERNELS_RESIZE_MATH_H_
#define HIPDNN_EP_KERNELS_RESIZE_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HIPDNN_EP_RESIZE_HD __host__ __device__
#else
#define HIPDNN_EP_RESIZE_HD
#endif

namespace hipdnn_ep::kernels::resize {

constexpr int kMaxRank = 8;
constexpr int64_t kMaxTaps = 4096;  // taps per axis an antialiased downscale may take (the validator's bound)

enum Mode { kNearest = 0, kLinear = 1, kCubic = 2 };
enum Coord {
  kHalfPixel = 0,
  kHalfPixelSymmetric = 1,
  kPytorchHalfPixel = 2,
  kAlignCorners = 3,
  kAsymmetric = 4,
  kTfHalfPixelForNn = 5,
  kTfCropAndResize = 6,
};
enum Nearest { kRoundPreferFloor = 0, kRoundPreferCeil = 1, kFloor = 2, kCeil = 3, kSimple = 4 };

struct Attrs {
  int mode, coord, nearest, exclude_outside, antialias;
  float cubic_a, extrapolation;
};

struct Axis {
  int64_t in, out;
  float scale, roi_start, roi_end;
};

// One output coordinate's taps along one axis: input indices clamp(base + j) for j in [lo, hi).
struct Taps {
  int64_t base;
  int lo, hi;
  float ratio, support_scale, inv_sum;
  bool outside;  // tf_crop_and_resize: the coordinate is outside X (the output is the extrapolation value)
};

inline float bits_to_float(int64_t bits) {
  const uint32_t b = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The axis' scale: the given one, or output size / input size (bits 0), as onnxruntime takes it for sizes.
inline float axis_scale(int64_t bits, int64_t in, int64_t out) {
  return bits == 0 ? static_cast<float>(out) / static_cast<float>(in) : bits_to_float(bits);
}

HIPDNN_EP_RESIZE_HD inline float original_coordinate(int coord, const Axis& a, int64_t o) {
  const float x = static_cast<float>(o);
  const float len_out = static_cast<float>(a.out);
  const float len_in = static_cast<float>(a.in);
  switch (coord) {
    case kHalfPixelSymmetric: {
      const float adjustment = len_out / (a.scale * len_in);
      const float offset = len_in / 2 * (1 - adjustment);
      return offset + (x + 0.5f) / a.scale - 0.5f;
    }
    case kPytorchHalfPixel:
      return a.out > 1 ? (x + 0.5f) / a.scale - 0.5f : 0.0f;
    case kAlignCorners:
      return a.out == 1 ? 0.0f : x * (len_in - 1) / (len_out - 1);
    case kAsymmetric:
      return x / a.scale;
    case kTfHalfPixelForNn:
      return (x + 0.5f) / a.scale;
    case kTfCropAndResize:
      return a.out > 1 ? a.roi_start * (len_in - 1) + x * (a.roi_end - a.roi_start) * (len_in - 1) / (len_out - 1)
                       : 0.5f * (a.roi_start + a.roi_end) * (len_in - 1);
    default:  // half_pixel
      return (x + 0.5f) / a.scale - 0.5f;
  }
}

HIPDNN_EP_RESIZE_HD inline float tap_coefficient(int mode, float cubic_a, float distance) {
  const float d = fabsf(distance);
  if (mode == kLinear) return d < 1.0f ? 1.0f - d : 0.0f;
  const float a = cubic_a;
  if (d <= 1.0f) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2.0f) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0.0f;
}

HIPDNN_EP_RESIZE_HD inline bool tap_inside(const Taps& t, const Axis& a, int j) {
  const int64_t i = t.base + j;
  return i >= 0 && i < a.in;
}

// The first tap offset and the number of taps of linear (support 1) or cubic (support 2) at a support scale.
HIPDNN_EP_RESIZE_HD inline int first_tap(int mode, float support_scale) {
  const float support = mode == kLinear ? 1.0f : 2.0f;
  return static_cast<int>(floorf(-support / support_scale)) + 1;
}

HIPDNN_EP_RESIZE_HD inline Taps axis_taps(const Attrs& at, const Axis& a, int64_t o) {
  Taps t{};
  t.inv_sum = 1.0f;
  const float x = original_coordinate(at.coord, a, o);
  if (at.coord == kTfCropAndResize && (x < 0.0f || x > static_cast<float>(a.in - 1))) {
    t.outside = true;
    return t;
  }
  if (at.mode == kNearest) {
    float r;
    switch (at.nearest) {
      case kRoundPreferCeil: r = roundf(x); break;
      case kFloor: r = floorf(x); break;
      case kCeil: r = ceilf(x); break;
      case kSimple: r = a.scale < 1.0f ? ceilf(x) : truncf(x); break;
      default: r = x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f ? floorf(x) : roundf(x); break;
    }
    int64_t i = static_cast<int64_t>(r);
    i = i < 0 ? 0 : (i >= a.in ? a.in - 1 : i);
    t.base = i;
    t.lo = 0;
    t.hi = 1;
    return t;
  }
  // base + 1 is the first tap at or past x; ratio in (0, 1] (the tap on the left is preferred)
  t.base = static_cast<int64_t>(ceilf(x)) - 1;
  t.ratio = x - static_cast<float>(t.base);
  t.support_scale = at.antialias && a.scale < 1.0f ? a.scale : 1.0f;
  const int start = first_tap(at.mode, t.support_scale);
  const int end = 2 - start;  // exclusive: 2 - 2 * start taps
  float sum = 0.0f;
  t.lo = end;
  t.hi = start;
  for (int j = start; j < end; ++j) {
    float c = tap_coefficient(at.mode, at.cubic_a, (static_cast<float>(j) - t.ratio) * t.support_scale);
    if (at.exclude_outside && !tap_inside(t, a, j)) c = 0.0f;
    if (c != 0.0f) {
      t.lo = j < t.lo ? j : t.lo;
      t.hi = j + 1;
    }
    sum += c;
  }
  if (t.hi <= t.lo) {  // no tap has weight (cannot happen with a finite coordinate): take the nearest
    t.lo = 0;
    t.hi = 1;
    t.base = static_cast<int64_t>(roundf(x));
    return t;
  }
  t.inv_sum = sum != 0.0f ? 1.0f / sum : 1.0f;
  return t;
}

HIPDNN_EP_RESIZE_HD inline float tap_weight(const Attrs& at, const Axis& a, const Taps& t, int j) {
  if (at.mode == kNearest || t.hi - t.lo == 1 && t.ratio == 0.0f) return 1.0f;
  if (at.exclude_outside && !tap_inside(t, a, j)) return 0.0f;
  return tap_coefficient(at.mode, at.cubic_a, (static_cast<float>(j) - t.ratio) * t.support_scale) * t.inv_sum;
}

HIPDNN_EP_RESIZE_HD inline int64_t tap_index(const Axis& a, const Taps& t, int j) {
  const int64_t i = t.base + j;
  return i < 0 ? 0 : (i >= a.in ? a.in - 1 : i);
}

}  // namespace hipdnn_ep::kernels::resize

#endif  // HIPDNN_EP_KERNELS_RESIZE_MATH_H_
