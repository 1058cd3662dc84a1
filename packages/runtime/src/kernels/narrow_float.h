// BFLOAT16 and the FLOAT8 formats of ONNX (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ): conversions between their
// bit patterns and double, shared by the CPU and GPU cast kernels (host and device functions).
//
// Encoding rounds to nearest, ties to even, directly from double (one rounding: float32, float16 and every
// integer below 2^53 are exact in double). NaN gives the format's NaN. A value whose rounded magnitude is
// beyond the largest finite value, or an infinity, gives: with saturate (FLOAT8 only, ONNX Cast's
// saturate=1), the largest finite value of its sign; without, inf where the format has one (BFLOAT16,
// E5M2) and NaN otherwise. The FNUZ formats have no negative zero (-0 and negative values rounding to zero
// give +0) and one NaN, 0x80. Decoding is exact (every value of these formats is a float).
#ifndef HIPDNN_EP_KERNELS_NARROW_FLOAT_H_
#define HIPDNN_EP_KERNELS_NARROW_FLOAT_H_

#include <cmath>
#include <cstdint>

#include "hipdnn_ep/runtime_abi.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HIPDNN_EP_NARROW_HD __host__ __device__
#else
#define HIPDNN_EP_NARROW_HD
#endif

namespace hipdnn_ep::kernels {

// The math of <cmath> on the host, CUDA/HIP's global device functions on the device.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define HIPDNN_EP_NARROW_MATH(fn) ::fn
#else
#define HIPDNN_EP_NARROW_MATH(fn) std::fn
#endif

// A format: exponent and mantissa bits, exponent bias, whether the all-ones exponent is inf/NaN (IEEE-like),
// whether it is a FNUZ format (NaN 0x80, no -0), and the largest finite magnitude's bit pattern.
struct NarrowFormat {
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee;
  bool fnuz;
  uint32_t max_code;  // largest finite magnitude (sign bit clear)
  uint32_t nan_code;  // the NaN written (sign bit clear; FNUZ: 0x80)
  bool saturates;     // saturate applies (FLOAT8; BFLOAT16 overflows to inf as ONNX's Cast does)
};

HIPDNN_EP_NARROW_HD inline bool is_narrow_float(int32_t dtype) {
  return dtype == HIPDNN_EP_DTYPE_BFLOAT16 || dtype == HIPDNN_EP_DTYPE_FLOAT8E4M3FN ||
         dtype == HIPDNN_EP_DTYPE_FLOAT8E4M3FNUZ || dtype == HIPDNN_EP_DTYPE_FLOAT8E5M2 ||
         dtype == HIPDNN_EP_DTYPE_FLOAT8E5M2FNUZ;
}

// Requires is_narrow_float(dtype).
HIPDNN_EP_NARROW_HD inline NarrowFormat narrow_format(int32_t dtype) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_BFLOAT16: return NarrowFormat{8, 7, 127, true, false, 0x7f7fu, 0x7fc0u, false};
    case HIPDNN_EP_DTYPE_FLOAT8E4M3FN: return NarrowFormat{4, 3, 7, false, false, 0x7eu, 0x7fu, true};
    case HIPDNN_EP_DTYPE_FLOAT8E4M3FNUZ: return NarrowFormat{4, 3, 8, false, true, 0x7fu, 0x80u, true};
    case HIPDNN_EP_DTYPE_FLOAT8E5M2: return NarrowFormat{5, 2, 15, true, false, 0x7bu, 0x7fu, true};
    default: return NarrowFormat{5, 2, 16, false, true, 0x7fu, 0x80u, true};  // FLOAT8E5M2FNUZ
  }
}

HIPDNN_EP_NARROW_HD inline uint32_t narrow_encode(const NarrowFormat& f, double x, bool saturate) {
  const int width = f.exp_bits + f.man_bits;
  const uint32_t sign_bit = 1u << width;
  if (HIPDNN_EP_NARROW_MATH(isnan)(x)) return f.nan_code;  // positive quiet NaN
  const bool negative = HIPDNN_EP_NARROW_MATH(signbit)(x);
  const uint32_t sign = negative ? sign_bit : 0u;
  const uint32_t inf_code = ((1u << f.exp_bits) - 1u) << f.man_bits;
  const auto overflow = [&]() -> uint32_t {
    if (saturate && f.saturates) return sign | f.max_code;
    if (f.ieee) return sign | inf_code;
    return f.nan_code | (f.fnuz ? 0u : sign);
  };
  const double a = HIPDNN_EP_NARROW_MATH(fabs)(x);
  if (HIPDNN_EP_NARROW_MATH(isinf)(a)) return overflow();
  if (a == 0.0) return f.fnuz ? 0u : sign;
  int e;
  (void)HIPDNN_EP_NARROW_MATH(frexp)(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int emin = 1 - f.bias;
  int q = e - 1 < emin ? emin : e - 1;  // exponent of the quantum's scale: quantum = 2^(q - man_bits)
  // Scaling by a power of two is exact; rint rounds half to even (the default rounding mode).
  const double r = HIPDNN_EP_NARROW_MATH(rint)(HIPDNN_EP_NARROW_MATH(ldexp)(a, f.man_bits - q));
  if (r == 0.0) return f.fnuz ? 0u : sign;
  const double lead = HIPDNN_EP_NARROW_MATH(ldexp)(1.0, f.man_bits);
  uint32_t code;
  if (r < lead) {  // subnormal (q == emin)
    code = static_cast<uint32_t>(r);
  } else {
    double m = r;
    if (m >= 2.0 * lead) {  // rounding carried into the next binade
      m *= 0.5;
      ++q;
    }
    const int biased = q + f.bias;
    if (biased > static_cast<int>((1u << f.exp_bits) - 1u)) return overflow();
    code = (static_cast<uint32_t>(biased) << f.man_bits) | (static_cast<uint32_t>(m - lead));
  }
  if (code > f.max_code) return overflow();
  return sign | code;
}

HIPDNN_EP_NARROW_HD inline double narrow_decode(const NarrowFormat& f, uint32_t bits) {
  const int width = f.exp_bits + f.man_bits;
  const uint32_t sign_bit = 1u << width;
  if (f.fnuz && bits == 0x80u) return NAN;
  const uint32_t mag = bits & (sign_bit - 1u);
  const uint32_t all_ones = (1u << f.exp_bits) - 1u;
  const uint32_t biased = mag >> f.man_bits;
  const uint32_t man = mag & ((1u << f.man_bits) - 1u);
  double v;
  if (f.ieee && biased == all_ones) {
    v = man == 0 ? INFINITY : NAN;
  } else if (!f.ieee && !f.fnuz && mag == ((all_ones << f.man_bits) | ((1u << f.man_bits) - 1u))) {
    v = NAN;  // E4M3FN: S.1111.111
  } else if (biased == 0) {
    v = HIPDNN_EP_NARROW_MATH(ldexp)(static_cast<double>(man), 1 - f.bias - f.man_bits);
  } else {
    v = HIPDNN_EP_NARROW_MATH(ldexp)(static_cast<double>(man + (1u << f.man_bits)), static_cast<int>(biased) - f.bias - f.man_bits);
  }
  return (bits & sign_bit) ? -v : v;
}

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_NARROW_FLOAT_H_
