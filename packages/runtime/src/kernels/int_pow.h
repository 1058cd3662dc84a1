// Integer Pow, shared by the CPU and GPU backends (host and device function). ONNX Runtime's CPU EP
// computes it as pow in double converted to T; for the integer operands of an integer type that is the
// exact power wherever the power fits T (every |result| below 2^53 is exact in double). It is computed
// here by repeated squaring instead: device pow() is not exact on integers (CUDA's pow(3.0, 1.0) gave
// 2.9999..., truncated to 2). A power out of T's range saturates (ONNX Runtime's conversion is
// undefined there); a negative exponent gives 1 / a^-b truncated toward zero (0 for |a| > 1, the
// saturated infinity for a == 0).
#ifndef HIPDNN_EP_KERNELS_INT_POW_H_
#define HIPDNN_EP_KERNELS_INT_POW_H_

#include <limits>
#include <type_traits>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HIPDNN_EP_INT_POW_HD __host__ __device__
#else
#define HIPDNN_EP_INT_POW_HD
#endif

namespace hipdnn_ep::kernels {

template <typename T>
HIPDNN_EP_INT_POW_HD inline T int_pow(T a, T b) {
  constexpr T lo = std::numeric_limits<T>::min();
  constexpr T hi = std::numeric_limits<T>::max();
  if constexpr (std::is_signed_v<T>) {
    if (b < 0) {
      if (a == 0) return hi;                     // 1 / 0: +inf, saturated
      if (a == 1) return T{1};
      if (a == -1) return (b % 2 == 0) ? T{1} : T{-1};
      return T{0};                               // |1 / a^n| < 1, truncated toward zero
    }
  }
  // |a|^b in the unsigned type of T's width, stopped once past T's range
  using U = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;
  const bool negative = std::is_signed_v<T> && a < 0 && (b % 2 != 0);
  const U limit = negative ? static_cast<U>(static_cast<U>(hi) + 1) : static_cast<U>(hi);
  U base = (std::is_signed_v<T> && a < 0) ? static_cast<U>(U{0} - static_cast<U>(a)) : static_cast<U>(a);
  U result = 1;
  bool over = false;
  for (T e = b; e > 0;) {
    if (e & 1) {
      if (base != 0 && result > limit / base) { over = true; break; }
      result = static_cast<U>(result * base);
    }
    e = static_cast<T>(e >> 1);
    if (e == 0) break;
    // base^2 past the limit: e's top bit still multiplies result (>= 1) by a power >= base^2
    if (base != 0 && base > limit / base) { over = true; break; }
    base = static_cast<U>(base * base);
  }
  if (over) return negative ? lo : hi;
  if (negative) return static_cast<T>(U{0} - result);
  return static_cast<T>(result);
}

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_INT_POW_H_
