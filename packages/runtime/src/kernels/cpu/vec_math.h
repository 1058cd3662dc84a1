// Portable SIMD helpers for the CPU kernels: four floats in a GCC/Clang vector
// extension type, which the compiler lowers to whatever the target has (two
// SSE2 registers on baseline x86-64, NEON on Arm), so no -march flag is
// needed. The math functions here are branch-free so that whole vectors go
// through them; each is accurate to a few float ulps on the range it states.
#ifndef HIPDNN_EP_KERNELS_CPU_VEC_MATH_H_
#define HIPDNN_EP_KERNELS_CPU_VEC_MATH_H_

#include <cstdint>
#include <cstring>

namespace hipdnn_ep::kernels::cpu::vec {

constexpr int64_t kWidth = 4;
typedef float f32x4 __attribute__((vector_size(16)));
typedef int32_t i32x4 __attribute__((vector_size(16)));

inline f32x4 splat(float v) { return f32x4{v, v, v, v}; }
inline f32x4 load(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, f32x4 v) { std::memcpy(p, &v, sizeof v); }
inline i32x4 bits(f32x4 v) {
  i32x4 b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
inline f32x4 from_bits(i32x4 b) {
  f32x4 v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
// mask lanes are all ones (from a vector comparison) or all zeros.
inline f32x4 select(i32x4 mask, f32x4 if_set, f32x4 if_clear) {
  return from_bits((mask & bits(if_set)) | (~mask & bits(if_clear)));
}

// exp(x) for x in [-87, 88] within about 2 ulps; 0 below -87 (the true value is
// under 2^-125), +inf above 88, NaN for NaN.
inline f32x4 exp(f32x4 x) {
  const f32x4 lo = splat(-87.0f);
  const f32x4 hi = splat(88.0f);
  const i32x4 underflow = x < lo;
  const i32x4 overflow = x > hi;
  const f32x4 xc = select(underflow, lo, select(overflow, hi, x));
  // x = n ln2 + r with |r| <= ln2 / 2; adding and subtracting 1.5 * 2^23 rounds
  // to the nearest integer. ln2 is split so that n * kLn2Hi is exact.
  const f32x4 round = splat(12582912.0f);
  const f32x4 n = (xc * splat(1.44269504088896341f) + round) - round;
  constexpr float kLn2Hi = 2839.0f / 4096.0f;
  constexpr float kLn2Lo = 3.19461833e-5f;  // ln2 - kLn2Hi
  const f32x4 r = (xc - n * splat(kLn2Hi)) - n * splat(kLn2Lo);
  // exp(r) = 1 + r + r^2 q(r): q fitted by least squares in relative error on |r| <= ln2 / 2.
  f32x4 q = splat(1.375140790e-3f);
  q = q * r + splat(8.368916341e-3f);
  q = q * r + splat(4.166953311e-2f);
  q = q * r + splat(1.666651846e-1f);
  q = q * r + splat(4.999998860e-1f);
  const f32x4 p = (r * r * q + r) + splat(1.0f);
  // 2^n from the exponent bits: n is in [-126, 127] after the clamp.
  const i32x4 scale = (__builtin_convertvector(n, i32x4) + 127) << 23;
  const f32x4 result = p * from_bits(scale);
  const f32x4 inf = splat(__builtin_inff());
  return select(underflow, splat(0.0f), select(overflow, inf, result));
}

// erf(x) within about 2 ulps (absolute error under 2e-7) for every float;
// NaN for NaN. Below 0.75 in magnitude erf(x) = x P(x^2); above, erf(x) =
// 1 - exp(-x^2) g(t) with t = 1 / (1 + |x|), where g (= erfc(x) exp(x^2)) is
// smooth. Both polynomials were fitted by least squares in double precision.
// From |x| = 4 on, erf rounds to +-1 in float.
inline f32x4 erf(f32x4 x) {
  const i32x4 sign = bits(x) & i32x4{INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
  const f32x4 a0 = from_bits(bits(x) & ~sign);
  const f32x4 four = splat(4.0f);
  const f32x4 a = a0 < four ? a0 : four;  // NaN becomes 4 here and is restored at the end
  const f32x4 u = a * a;
  f32x4 small = splat(-6.787303721e-4f);
  small = small * u + splat(5.119888713e-3f);
  small = small * u + splat(-2.683752002e-2f);
  small = small * u + splat(1.128344032e-1f);
  small = small * u + splat(-3.761262404e-1f);
  small = small * u + splat(1.128379166e+0f);
  small = small * a;
  const f32x4 t = splat(1.0f) / (splat(1.0f) + a);
  f32x4 g = splat(4.807654675e-1f);
  g = g * t + splat(-1.722871646e+0f);
  g = g * t + splat(2.318769216e+0f);
  g = g * t + splat(-1.023438142e+0f);
  g = g * t + splat(-6.106760470e-1f);
  g = g * t + splat(4.726065204e-1f);
  g = g * t + splat(5.171043389e-1f);
  g = g * t + splat(5.700732878e-1f);
  g = g * t + splat(-3.040970370e-4f);
  const f32x4 large = splat(1.0f) - exp(-u) * g;
  const f32x4 magnitude = a < splat(0.75f) ? small : large;
  const f32x4 result = from_bits(bits(magnitude) | sign);
  return x == x ? result : x;
}

// Horizontal sum in a fixed order (the result does not depend on the build).
inline float sum(f32x4 v) {
  return (v[0] + v[2]) + (v[1] + v[3]);
}
inline float max(f32x4 v) {
  float m = v[0];
  for (int i = 1; i < kWidth; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

}  // namespace hipdnn_ep::kernels::cpu::vec

#endif  // HIPDNN_EP_KERNELS_CPU_VEC_MATH_H_
