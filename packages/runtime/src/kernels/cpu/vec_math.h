// Portable SIMD helpers for the CPU kernels: floats in GCC/Clang vector
// extension types, which the compiler lowers to whatever the target has (SSE2
// on baseline x86-64, NEON on Arm), so no -march flag is needed. Everything is
// a template over the vector type: f32x4 everywhere, and f32x8 inside functions
// compiled for AVX2 (VEC_AVX2 below), which the kernels pick at run time.
// The math functions are branch-free so that whole vectors go through them;
// each is accurate to a few float ulps on the range it states, and gives the
// same bits at either width.
#ifndef HIPDNN_EP_KERNELS_CPU_VEC_MATH_H_
#define HIPDNN_EP_KERNELS_CPU_VEC_MATH_H_

#include <cstdint>
#include <cstring>

// Helpers must be inlined into their caller to take on its target (AVX2 or not).
#define HIPDNN_EP_VEC_INLINE __attribute__((always_inline)) inline

#if defined(__x86_64__) && defined(__GNUC__)
#define HIPDNN_EP_VEC_AVX2 1
#define HIPDNN_EP_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define HIPDNN_EP_VEC_AVX2 0
#endif

// f32x8 helpers return AVX vectors from functions that, on their own, target
// SSE2; they are always inlined into AVX2 functions, so no call ever uses that ABI.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace hipdnn_ep::kernels::cpu::vec {

constexpr int64_t kWidth = 4;
typedef float f32x4 __attribute__((vector_size(16)));
typedef float f32x8 __attribute__((vector_size(32)));  // only inside HIPDNN_EP_TARGET_AVX2 functions

template <typename V>
constexpr int64_t width = static_cast<int64_t>(sizeof(V) / sizeof(float));
template <typename V>
using mask_t = decltype(V{} < V{});  // the int32 lanes a comparison gives

// Whether this CPU runs AVX2 (checked once).
inline bool has_avx2() {
#if HIPDNN_EP_VEC_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

template <typename V>
HIPDNN_EP_VEC_INLINE V splat(float v) {
  return V{} + v;
}
template <typename V>
HIPDNN_EP_VEC_INLINE V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename V>
HIPDNN_EP_VEC_INLINE void store(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename V>
HIPDNN_EP_VEC_INLINE mask_t<V> bits(V v) {
  mask_t<V> b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
template <typename V>
HIPDNN_EP_VEC_INLINE V from_bits(mask_t<V> b) {
  V v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
// mask lanes are all ones (from a vector comparison) or all zeros.
template <typename V>
HIPDNN_EP_VEC_INLINE V select(mask_t<V> mask, V if_set, V if_clear) {
  return from_bits<V>((mask & bits(if_set)) | (~mask & bits(if_clear)));
}

// exp(x) for x in [-87, 88] within about 2 ulps; 0 below -87 (the true value is
// under 2^-125), +inf above 88, NaN for NaN.
template <typename V>
HIPDNN_EP_VEC_INLINE V exp(V x) {
  const V lo = splat<V>(-87.0f);
  const V hi = splat<V>(88.0f);
  const mask_t<V> underflow = x < lo;
  const mask_t<V> overflow = x > hi;
  const V xc = select(underflow, lo, select(overflow, hi, x));
  // x = n ln2 + r with |r| <= ln2 / 2; adding and subtracting 1.5 * 2^23 rounds
  // to the nearest integer. ln2 is split so that n * kLn2Hi is exact.
  const V round = splat<V>(12582912.0f);
  const V n = (xc * splat<V>(1.44269504088896341f) + round) - round;
  constexpr float kLn2Hi = 2839.0f / 4096.0f;
  constexpr float kLn2Lo = 3.19461833e-5f;  // ln2 - kLn2Hi
  const V r = (xc - n * splat<V>(kLn2Hi)) - n * splat<V>(kLn2Lo);
  // exp(r) = 1 + r + r^2 q(r): q fitted by least squares in relative error on |r| <= ln2 / 2.
  V q = splat<V>(1.375140790e-3f);
  q = q * r + splat<V>(8.368916341e-3f);
  q = q * r + splat<V>(4.166953311e-2f);
  q = q * r + splat<V>(1.666651846e-1f);
  q = q * r + splat<V>(4.999998860e-1f);
  const V p = (r * r * q + r) + splat<V>(1.0f);
  // 2^n from the exponent bits: n is in [-126, 127] after the clamp.
  const mask_t<V> scale = (__builtin_convertvector(n, mask_t<V>) + 127) << 23;
  const V result = p * from_bits<V>(scale);
  const V inf = splat<V>(__builtin_inff());
  return select(underflow, splat<V>(0.0f), select(overflow, inf, result));
}

// erf(x) within about 2 ulps (absolute error under 2e-7) for every float;
// NaN for NaN. Below 0.75 in magnitude erf(x) = x P(x^2); above, erf(x) =
// 1 - exp(-x^2) g(t) with t = 1 / (1 + |x|), where g (= erfc(x) exp(x^2)) is
// smooth. Both polynomials were fitted by least squares in double precision.
// From |x| = 4 on, erf rounds to +-1 in float.
template <typename V>
HIPDNN_EP_VEC_INLINE V erf(V x) {
  const mask_t<V> sign = bits(x) & (mask_t<V>{} + INT32_MIN);
  const V a0 = from_bits<V>(bits(x) & ~sign);
  const V four = splat<V>(4.0f);
  const V a = a0 < four ? a0 : four;  // NaN becomes 4 here and is restored at the end
  const V u = a * a;
  V small = splat<V>(-6.787303721e-4f);
  small = small * u + splat<V>(5.119888713e-3f);
  small = small * u + splat<V>(-2.683752002e-2f);
  small = small * u + splat<V>(1.128344032e-1f);
  small = small * u + splat<V>(-3.761262404e-1f);
  small = small * u + splat<V>(1.128379166e+0f);
  small = small * a;
  const V t = splat<V>(1.0f) / (splat<V>(1.0f) + a);
  V g = splat<V>(4.807654675e-1f);
  g = g * t + splat<V>(-1.722871646e+0f);
  g = g * t + splat<V>(2.318769216e+0f);
  g = g * t + splat<V>(-1.023438142e+0f);
  g = g * t + splat<V>(-6.106760470e-1f);
  g = g * t + splat<V>(4.726065204e-1f);
  g = g * t + splat<V>(5.171043389e-1f);
  g = g * t + splat<V>(5.700732878e-1f);
  g = g * t + splat<V>(-3.040970370e-4f);
  const V large = splat<V>(1.0f) - exp(-u) * g;
  const V magnitude = a < splat<V>(0.75f) ? small : large;
  const V result = from_bits<V>(bits(magnitude) | sign);
  return x == x ? result : x;
}

// Horizontal sum, halving the width each step: a fixed order for each width.
template <typename V>
HIPDNN_EP_VEC_INLINE float sum(V v) {
  for (int64_t half = width<V> / 2; half >= 1; half /= 2) {
    for (int64_t i = 0; i < half; ++i) v[i] += v[i + half];
  }
  return v[0];
}
template <typename V>
HIPDNN_EP_VEC_INLINE float max(V v) {
  float m = v[0];
  for (int64_t i = 1; i < width<V>; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

}  // namespace hipdnn_ep::kernels::cpu::vec

#pragma GCC diagnostic pop

#endif  // HIPDNN_EP_KERNELS_CPU_VEC_MATH_H_
