// IEEE 754 binary16 storage type and its conversions to and from float.
//
// Kernels keep float16 tensors as raw 16-bit patterns and compute in float.
// float -> half rounds to nearest, ties to even; overflow gives +-inf, NaN
// stays NaN (quiet), and values below the smallest subnormal round to +-0.
#ifndef HIPDNN_EP_KERNELS_HALF_H_
#define HIPDNN_EP_KERNELS_HALF_H_

#include <cstdint>
#include <cstring>

namespace hipdnn_ep::kernels {

struct half_t {
  uint16_t bits;
};

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1fu) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf or NaN (payload kept)
  } else if (exponent != 0) {
    bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: normalize it; every such value is a normal float.
    int32_t e = 127 - 15 + 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t float_to_half_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    const uint16_t nan_bit = abs > 0x7f800000u ? 0x200u : 0u;
    return static_cast<uint16_t>(sign | 0x7c00u | nan_bit | ((abs >> 13) & 0x3ffu));
  }
  // 65520 = largest half (65504) plus half an ulp: it and above round to inf.
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const int32_t exponent = static_cast<int32_t>(abs >> 23) - 127;
  if (exponent >= -14) {
    // Normal half. Drop 13 mantissa bits with round-to-nearest-even; a carry
    // out of the mantissa correctly bumps the exponent.
    const uint32_t rebased = abs - (static_cast<uint32_t>(127 - 15) << 23);
    const uint32_t lsb = (rebased >> 13) & 1u;
    return static_cast<uint16_t>(sign | ((rebased + 0xfffu + lsb) >> 13));
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal
  // Subnormal half: value = m * 2^-24 with m = full mantissa >> shift.
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = static_cast<uint32_t>(-exponent - 1);  // 14..24
  const uint32_t truncated = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  uint32_t result = truncated;
  if (remainder > halfway || (remainder == halfway && (truncated & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

inline float to_float(half_t h) { return half_bits_to_float(h.bits); }
inline half_t to_half(float f) { return half_t{float_to_half_bits(f)}; }

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_HALF_H_
