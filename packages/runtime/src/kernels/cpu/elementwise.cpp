// CPU elementwise kernels: binary (with broadcasting), unary, cast, where.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/int_pow.h"
#include "kernels/sigmoid.h"
#include "kernels/narrow_float.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/tensor_util.h"

// The f32x8 templates are inlined into AVX2 functions only (see vec_math.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace hipdnn_ep::kernels::cpu {
namespace {

// Signed integer arithmetic wraps (two's complement) instead of being UB.
// Narrow types compute in unsigned int (WrapUnsigned): their operands would promote to int.
template <typename T>
T wrapping(T a, T b, char op) {
  using U = WrapUnsigned<T>;
  const U ua = static_cast<U>(a);
  const U ub = static_cast<U>(b);
  switch (op) {
    case '+': return static_cast<T>(ua + ub);
    case '-': return static_cast<T>(ua - ub);
    default: return static_cast<T>(ua * ub);
  }
}

// Integer division truncates toward zero like C++ and ONNX Runtime; division
// by zero is an error rather than a crash.
template <typename T>
T int_divide(T a, T b) {
  if (b == 0) fail_invalid("integer division by zero");
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrapping<T>(T{0}, a, '-');  // INT_MIN / -1 would trap
  }
  return static_cast<T>(a / b);
}

// Integer Pow: int_pow.h (exact, shared with the other backend)

// Integer Mod: fmod == false takes the divisor's sign (Python's %), true the
// dividend's (C's %); by zero is an error.
template <typename T>
T int_mod(T a, T b, bool fmod) {
  if (b == 0) fail_invalid("integer division by zero");  // the message the GPU backends give
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return T{0};  // INT_MIN % -1 would trap
    const T r = static_cast<T>(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) return static_cast<T>(r + b);
    return r;
  } else {
    (void)fmod;
    return static_cast<T>(a % b);
  }
}

template <typename TIn, typename TOut, typename Fn>
void broadcast_binary(const hipdnn_ep_tensor_ref_t& a, const hipdnn_ep_tensor_ref_t& b,
                      const hipdnn_ep_tensor_ref_t& out, Fn fn) {
  const Dims shape = dims_of(out);
  const std::array<Dims, 3> strides{contiguous_strides(shape), broadcast_strides(dims_of(a), shape),
                                    broadcast_strides(dims_of(b), shape)};
  auto* po = static_cast<TOut*>(out.data);
  const auto* pa = static_cast<const TIn*>(a.data);
  const auto* pb = static_cast<const TIn*>(b.data);
  for_each_row<3>(shape, strides, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    TOut* o = po + off[0];
    const TIn* x = pa + off[1];
    const TIn* y = pb + off[2];
    // The common rows get loops with constant strides, which the compiler vectorizes.
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) store(o, i, fn(load(x, i), load(y, i)));
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      const auto yv = load(y, 0);
      for (int64_t i = 0; i < n; ++i) store(o, i, fn(load(x, i), yv));
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const auto xv = load(x, 0);
      for (int64_t i = 0; i < n; ++i) store(o, i, fn(xv, load(y, i)));
    } else {
      for (int64_t i = 0; i < n; ++i) store(o, i * st[0], fn(load(x, i * st[1]), load(y, i * st[2])));
    }
  });
}

// ONNX BitShift: an amount below 0 or at least the width shifts everything out (a negative signed
// value shifted right leaves -1); a left shift wraps, a signed right shift is arithmetic.
template <typename T>
T shift_bits(T x, T s, bool left) {
  constexpr int kWidth = static_cast<int>(sizeof(T) * 8);
  bool out_of_range = false;
  if constexpr (std::is_signed_v<T>) out_of_range = s < 0 || s >= kWidth;
  else out_of_range = s >= kWidth;
  if (out_of_range) {
    if constexpr (std::is_signed_v<T>) return !left && x < 0 ? T{-1} : T{0};
    else return T{0};
  }
  using U = std::make_unsigned_t<T>;
  if (left) return static_cast<T>(static_cast<U>(static_cast<U>(x) << s));
  return static_cast<T>(x >> s);
}

bool is_bitwise_binary(int64_t op) {
  return op >= HIPDNN_EP_BINARY_OP_BITWISE_AND && op <= HIPDNN_EP_BINARY_OP_SHIFT_RIGHT;
}

template <typename T>
void bitwise_typed(int64_t op, const hipdnn_ep_tensor_ref_t& a, const hipdnn_ep_tensor_ref_t& b,
                   const hipdnn_ep_tensor_ref_t& out) {
  switch (op) {
    case HIPDNN_EP_BINARY_OP_BITWISE_AND:
      return broadcast_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x & y); });
    case HIPDNN_EP_BINARY_OP_BITWISE_OR:
      return broadcast_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x | y); });
    case HIPDNN_EP_BINARY_OP_BITWISE_XOR:
      return broadcast_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x ^ y); });
    case HIPDNN_EP_BINARY_OP_SHIFT_LEFT:
      return broadcast_binary<T, T>(a, b, out, [](T x, T y) { return shift_bits<T>(x, y, true); });
    default:
      return broadcast_binary<T, T>(a, b, out, [](T x, T y) { return shift_bits<T>(x, y, false); });
  }
}

template <typename T>
void binary_typed(int64_t op, const hipdnn_ep_tensor_ref_t& a, const hipdnn_ep_tensor_ref_t& b,
                  const hipdnn_ep_tensor_ref_t& out) {
  using C = typename ComputeType<T>::type;
  constexpr bool kInt = std::is_integral_v<C> && !std::is_same_v<C, bool>;
  switch (op) {
    case HIPDNN_EP_BINARY_OP_ADD:
      if constexpr (kInt) return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return wrapping(x, y, '+'); });
      else return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return x + y; });
    case HIPDNN_EP_BINARY_OP_SUB:
      if constexpr (kInt) return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return wrapping(x, y, '-'); });
      else return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return x - y; });
    case HIPDNN_EP_BINARY_OP_MUL:
      if constexpr (kInt) return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return wrapping(x, y, '*'); });
      else return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return x * y; });
    case HIPDNN_EP_BINARY_OP_DIV:
      if constexpr (kInt) return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return int_divide(x, y); });
      else return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return x / y; });
    case HIPDNN_EP_BINARY_OP_POW:
      if constexpr (std::is_floating_point_v<C>) {
        return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return static_cast<C>(std::pow(x, y)); });
      } else if constexpr (kInt) {
        return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return int_pow(x, y); });
      }
      break;
    case HIPDNN_EP_BINARY_OP_EQUAL:
      return broadcast_binary<T, bool_t>(a, b, out, [](C x, C y) { return x == y; });
    case HIPDNN_EP_BINARY_OP_LESS:
      return broadcast_binary<T, bool_t>(a, b, out, [](C x, C y) { return x < y; });
    case HIPDNN_EP_BINARY_OP_GREATER:
      return broadcast_binary<T, bool_t>(a, b, out, [](C x, C y) { return x > y; });
    case HIPDNN_EP_BINARY_OP_GREATER_OR_EQUAL:
      return broadcast_binary<T, bool_t>(a, b, out, [](C x, C y) { return x >= y; });
    case HIPDNN_EP_BINARY_OP_LESS_OR_EQUAL:
      return broadcast_binary<T, bool_t>(a, b, out, [](C x, C y) { return x <= y; });
    // NaN in either operand gives NaN, as ONNX Runtime's Min and Max do.
    case HIPDNN_EP_BINARY_OP_MIN:
      if constexpr (kInt) return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return std::min(x, y); });
      else return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return std::isnan(x) || x < y ? x : y; });
    case HIPDNN_EP_BINARY_OP_MAX:
      if constexpr (kInt) return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return std::max(x, y); });
      else return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return std::isnan(x) || x > y ? x : y; });
    case HIPDNN_EP_BINARY_OP_MOD:
      if constexpr (kInt) return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return int_mod(x, y, false); });
      break;
    case HIPDNN_EP_BINARY_OP_FMOD:
      if constexpr (kInt) return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return int_mod(x, y, true); });
      else return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return static_cast<C>(std::fmod(x, y)); });
    case HIPDNN_EP_BINARY_OP_SILU_MUL:
      if constexpr (std::is_floating_point_v<C>) {
        return broadcast_binary<T, T>(a, b, out, [](C x, C y) { return x * sigmoid(x) * y; });
      }
      break;
    default: break;
  }
  fail(HIPDNN_EP_STATUS_INTERNAL, "binary op " + std::to_string(op) + " reached the CPU kernel unvalidated");
}

// The vectorized unary ops, for map_unary_vec.
struct ErfOp {
  template <typename V>
  HIPDNN_EP_VEC_INLINE V operator()(V x) const {
    return vec::erf(x);
  }
};
struct GeluErfOp {
  template <typename V>
  HIPDNN_EP_VEC_INLINE V operator()(V x) const {
    return vec::splat<V>(0.5f) * x * (vec::splat<V>(1.0f) + vec::erf(x * vec::splat<V>(0.70710678118654752f)));
  }
};

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286536f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

template <typename T, typename Fn>
void map_unary(const hipdnn_ep_tensor_ref_t& in, const hipdnn_ep_tensor_ref_t& out, Fn fn) {
  const auto* x = static_cast<const T*>(in.data);
  auto* y = static_cast<T*>(out.data);
  const int64_t n = element_count(in);
  for (int64_t i = 0; i < n; ++i) store(y, i, fn(load(x, i)));
}

// map_unary for an op of whole vectors (ErfOp, GeluErfOp). Chunks go through a
// float buffer, filled and drained element by element (so that vector loads
// never wait on just-written single lanes); the tail is padded with 0.
template <typename V, typename T, typename Op>
HIPDNN_EP_VEC_INLINE void map_unary_vec(const T* x, T* y, int64_t n, Op op) {
  constexpr int64_t kWidth = vec::width<V>;
  constexpr int64_t kChunk = 256;
  alignas(32) float buffer[kChunk];
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t count = std::min(kChunk, n - c0);
    const int64_t padded = (count + kWidth - 1) / kWidth * kWidth;
    for (int64_t i = 0; i < count; ++i) buffer[i] = load(x, c0 + i);
    for (int64_t i = count; i < padded; ++i) buffer[i] = 0.0f;
    for (int64_t i = 0; i < padded; i += kWidth) vec::store(buffer + i, op(vec::load<V>(buffer + i)));
    for (int64_t i = 0; i < count; ++i) store(y, c0 + i, buffer[i]);
  }
}

#if HIPDNN_EP_VEC_AVX2
template <typename T, typename Op>
HIPDNN_EP_TARGET_AVX2 void map_unary_vec_avx2(const T* x, T* y, int64_t n, Op op) {
  map_unary_vec<vec::f32x8>(x, y, n, op);
}
#endif

// Eight lanes where the CPU has AVX2, else four (the ops give the same bits either way).
template <typename T, typename Op>
void map_unary_vec_any(const hipdnn_ep_tensor_ref_t& in, const hipdnn_ep_tensor_ref_t& out, Op op) {
  const auto* x = static_cast<const T*>(in.data);
  auto* y = static_cast<T*>(out.data);
  const int64_t n = element_count(in);
#if HIPDNN_EP_VEC_AVX2
  if (vec::has_avx2()) return map_unary_vec_avx2(x, y, n, op);
#endif
  map_unary_vec<vec::f32x4>(x, y, n, op);
}

template <typename T>
void unary_typed(int64_t op, const hipdnn_ep_tensor_ref_t& in, const hipdnn_ep_tensor_ref_t& out) {
  using C = typename ComputeType<T>::type;
  if constexpr (std::is_integral_v<C>) {
    if constexpr (std::is_signed_v<C>) {
      if (op == HIPDNN_EP_UNARY_OP_RELU) return map_unary<T>(in, out, [](C x) { return x < 0 ? C{0} : x; });
      if (op == HIPDNN_EP_UNARY_OP_NEG) return map_unary<T>(in, out, [](C x) { return wrapping<C>(C{0}, x, '-'); });
      if (op == HIPDNN_EP_UNARY_OP_ABS) return map_unary<T>(in, out, [](C x) { return x < 0 ? wrapping<C>(C{0}, x, '-') : x; });
      if (op == HIPDNN_EP_UNARY_OP_SIGN) return map_unary<T>(in, out, [](C x) { return static_cast<C>((x > 0) - (x < 0)); });
    } else {  // unsigned: Relu and Neg are not defined by ONNX (the manifest refuses them)
      if (op == HIPDNN_EP_UNARY_OP_ABS) return map_unary<T>(in, out, [](C x) { return x; });
      if (op == HIPDNN_EP_UNARY_OP_SIGN) return map_unary<T>(in, out, [](C x) { return static_cast<C>(x != 0); });
    }
  } else {
    if (op == HIPDNN_EP_UNARY_OP_IS_NAN) {
      const auto* x = static_cast<const T*>(in.data);
      auto* y = static_cast<bool_t*>(out.data);
      const int64_t n = element_count(in);
      for (int64_t i = 0; i < n; ++i) store(y, i, std::isnan(load(x, i)));
      return;
    }
    switch (op) {
      // x < 0 rather than max(): NaN stays NaN.
      case HIPDNN_EP_UNARY_OP_RELU: return map_unary<T>(in, out, [](float x) { return x < 0.0f ? 0.0f : x; });
      case HIPDNN_EP_UNARY_OP_SIGMOID: return map_unary<T>(in, out, sigmoid<float>);
      case HIPDNN_EP_UNARY_OP_TANH: return map_unary<T>(in, out, [](float x) { return std::tanh(x); });
      case HIPDNN_EP_UNARY_OP_EXP: return map_unary<T>(in, out, [](float x) { return std::exp(x); });
      case HIPDNN_EP_UNARY_OP_LOG: return map_unary<T>(in, out, [](float x) { return std::log(x); });
      case HIPDNN_EP_UNARY_OP_SQRT: return map_unary<T>(in, out, [](float x) { return std::sqrt(x); });
      case HIPDNN_EP_UNARY_OP_NEG: return map_unary<T>(in, out, [](float x) { return -x; });
      case HIPDNN_EP_UNARY_OP_ERF: return map_unary_vec_any<T>(in, out, ErfOp{});
      case HIPDNN_EP_UNARY_OP_GELU_ERF: return map_unary_vec_any<T>(in, out, GeluErfOp{});
      case HIPDNN_EP_UNARY_OP_GELU_TANH: return map_unary<T>(in, out, gelu_tanh);
      case HIPDNN_EP_UNARY_OP_ABS: return map_unary<T>(in, out, [](float x) { return std::fabs(x); });
      case HIPDNN_EP_UNARY_OP_FLOOR: return map_unary<T>(in, out, [](float x) { return std::floor(x); });
      case HIPDNN_EP_UNARY_OP_CEIL: return map_unary<T>(in, out, [](float x) { return std::ceil(x); });
      // NaN stays NaN (ONNX Sign of NaN is NaN in ONNX Runtime).
      case HIPDNN_EP_UNARY_OP_SIGN:
        return map_unary<T>(in, out, [](float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? 0.0f : x; });
      case HIPDNN_EP_UNARY_OP_RECIPROCAL: return map_unary<T>(in, out, [](float x) { return 1.0f / x; });
      case HIPDNN_EP_UNARY_OP_SIN: return map_unary<T>(in, out, [](float x) { return std::sin(x); });
      case HIPDNN_EP_UNARY_OP_COS: return map_unary<T>(in, out, [](float x) { return std::cos(x); });
      case HIPDNN_EP_UNARY_OP_TAN: return map_unary<T>(in, out, [](float x) { return std::tan(x); });
      case HIPDNN_EP_UNARY_OP_ASIN: return map_unary<T>(in, out, [](float x) { return std::asin(x); });
      case HIPDNN_EP_UNARY_OP_ACOS: return map_unary<T>(in, out, [](float x) { return std::acos(x); });
      case HIPDNN_EP_UNARY_OP_ATAN: return map_unary<T>(in, out, [](float x) { return std::atan(x); });
      case HIPDNN_EP_UNARY_OP_SINH: return map_unary<T>(in, out, [](float x) { return std::sinh(x); });
      case HIPDNN_EP_UNARY_OP_COSH: return map_unary<T>(in, out, [](float x) { return std::cosh(x); });
      case HIPDNN_EP_UNARY_OP_ASINH: return map_unary<T>(in, out, [](float x) { return std::asinh(x); });
      case HIPDNN_EP_UNARY_OP_ACOSH: return map_unary<T>(in, out, [](float x) { return std::acosh(x); });
      case HIPDNN_EP_UNARY_OP_ATANH: return map_unary<T>(in, out, [](float x) { return std::atanh(x); });
      // halves to even, as ONNX Round (the default rounding mode)
      case HIPDNN_EP_UNARY_OP_ROUND: return map_unary<T>(in, out, [](float x) { return std::nearbyint(x); });
      case HIPDNN_EP_UNARY_OP_SOFTSIGN: return map_unary<T>(in, out, [](float x) { return x / (1.0f + std::fabs(x)); });
      default: break;
    }
  }
  fail(HIPDNN_EP_STATUS_INTERNAL, "unary op " + std::to_string(op) + " reached the CPU kernel unvalidated");
}

// ---------------------------------------------------------------- cast

// A value of any storage type as double (exact for every type but int64
// beyond 2^53, which take the integer path below).
template <typename T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, half_t>) return to_float(v);
  else if constexpr (std::is_same_v<T, bool_t>) return v.value != 0 ? 1.0 : 0.0;
  else return static_cast<double>(v);
}

// Float to integer: truncates toward zero and saturates at the type's range;
// NaN becomes 0 (ONNX leaves out-of-range casts undefined).
template <typename TOut>
TOut float_to_int(double v) {
  if (std::isnan(v)) return TOut{0};
  constexpr TOut lo = std::numeric_limits<TOut>::min();
  constexpr TOut hi = std::numeric_limits<TOut>::max();
  if (v <= static_cast<double>(lo)) return lo;
  // static_cast<double>(hi) may round up to 2^63; anything at or above it saturates.
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<TOut>(v);
}

template <typename TOut, typename TIn>
TOut convert(TIn v) {
  constexpr bool kInIsFloat = std::is_same_v<TIn, half_t> || std::is_floating_point_v<TIn>;
  if constexpr (std::is_same_v<TOut, bool_t>) {
    if constexpr (std::is_same_v<TIn, bool_t>) return bool_t{static_cast<uint8_t>(v.value != 0)};
    else if constexpr (kInIsFloat) return bool_t{static_cast<uint8_t>(as_double(v) != 0.0)};  // NaN -> true
    else return bool_t{static_cast<uint8_t>(v != 0)};
  } else if constexpr (std::is_same_v<TOut, half_t>) {
    return to_half(static_cast<float>(as_double(v)));
  } else if constexpr (std::is_floating_point_v<TOut>) {
    if constexpr (std::is_integral_v<TIn>) return static_cast<TOut>(v);
    else return static_cast<TOut>(as_double(v));
  } else {  // integer output
    if constexpr (kInIsFloat) return float_to_int<TOut>(as_double(v));
    else if constexpr (std::is_same_v<TIn, bool_t>) return static_cast<TOut>(v.value != 0);
    else return static_cast<TOut>(v);  // integer to integer: modulo 2^bits
  }
}

}  // namespace

void binary(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const int64_t op = args.int_attrs[HIPDNN_EP_KERNEL_BINARY_INT_ATTR_OP];
  if (args.inputs[0].dtype == HIPDNN_EP_DTYPE_BOOL) {
    const auto& a = args.inputs[0];
    const auto& b = args.inputs[1];
    const auto& out = args.outputs[0];
    switch (op) {
      case HIPDNN_EP_BINARY_OP_EQUAL: return broadcast_binary<bool_t, bool_t>(a, b, out, [](bool x, bool y) { return x == y; });
      case HIPDNN_EP_BINARY_OP_AND: return broadcast_binary<bool_t, bool_t>(a, b, out, [](bool x, bool y) { return x && y; });
      case HIPDNN_EP_BINARY_OP_OR: return broadcast_binary<bool_t, bool_t>(a, b, out, [](bool x, bool y) { return x || y; });
      case HIPDNN_EP_BINARY_OP_XOR: return broadcast_binary<bool_t, bool_t>(a, b, out, [](bool x, bool y) { return x != y; });
      default: fail(HIPDNN_EP_STATUS_INTERNAL, "binary op " + std::to_string(op) + " on BOOL reached the CPU kernel unvalidated");
    }
  }
  if (args.inputs[0].dtype == HIPDNN_EP_DTYPE_FLOAT64) {  // the manifest's FLOAT64 ops (all but MOD and the bitwise ones)
    return binary_typed<double>(op, args.inputs[0], args.inputs[1], args.outputs[0]);
  }
  if (is_bitwise_binary(op)) {
    dispatch_integer(args.inputs[0].dtype, "binary", [&](auto tag) {
      bitwise_typed<typename decltype(tag)::type>(op, args.inputs[0], args.inputs[1], args.outputs[0]);
    });
    return;
  }
  dispatch_numeric(args.inputs[0].dtype, "binary", [&](auto tag) {
    binary_typed<typename decltype(tag)::type>(op, args.inputs[0], args.inputs[1], args.outputs[0]);
  });
}

void unary(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const int64_t op = args.int_attrs[HIPDNN_EP_KERNEL_UNARY_INT_ATTR_OP];
  if (op == HIPDNN_EP_UNARY_OP_NOT) {
    map_unary<bool_t>(args.inputs[0], args.outputs[0], [](bool x) { return !x; });
    return;
  }
  if (op == HIPDNN_EP_UNARY_OP_BITWISE_NOT) {
    dispatch_integer(args.inputs[0].dtype, "unary", [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_unary<T>(args.inputs[0], args.outputs[0], [](T x) { return static_cast<T>(~x); });
    });
    return;
  }
  dispatch_numeric(args.inputs[0].dtype, "unary", [&](auto tag) {
    unary_typed<typename decltype(tag)::type>(op, args.inputs[0], args.outputs[0]);
  });
}

namespace {

// BFLOAT16 and FLOAT8 (narrow_float.h): raw bit patterns of 1 or 2 bytes.
uint32_t load_narrow(const void* p, size_t bytes, int64_t i) {
  return bytes == 1 ? static_cast<const uint8_t*>(p)[i] : static_cast<const uint16_t*>(p)[i];
}
void store_narrow(void* p, size_t bytes, int64_t i, uint32_t v) {
  if (bytes == 1) static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
  else static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v);
}

void cast_narrow(const hipdnn_ep_tensor_ref_t& in, const hipdnn_ep_tensor_ref_t& out, int64_t n, bool saturate) {
  const bool narrow_in = is_narrow_float(in.dtype);
  const bool narrow_out = is_narrow_float(out.dtype);
  const size_t in_bytes = dtype_size(in.dtype);
  const size_t out_bytes = dtype_size(out.dtype);
  if (narrow_in && narrow_out) {
    const NarrowFormat fi = narrow_format(in.dtype);
    const NarrowFormat fo = narrow_format(out.dtype);
    for (int64_t i = 0; i < n; ++i) {
      store_narrow(out.data, out_bytes, i, narrow_encode(fo, narrow_decode(fi, load_narrow(in.data, in_bytes, i)), saturate));
    }
  } else if (narrow_in) {
    const NarrowFormat fi = narrow_format(in.dtype);
    dispatch_any(out.dtype, "cast", [&](auto out_tag) {
      using TOut = typename decltype(out_tag)::type;
      auto* y = static_cast<TOut*>(out.data);
      for (int64_t i = 0; i < n; ++i) y[i] = convert<TOut>(narrow_decode(fi, load_narrow(in.data, in_bytes, i)));
    });
  } else {
    const NarrowFormat fo = narrow_format(out.dtype);
    dispatch_any(in.dtype, "cast", [&](auto in_tag) {
      using TIn = typename decltype(in_tag)::type;
      const auto* x = static_cast<const TIn*>(in.data);
      for (int64_t i = 0; i < n; ++i) store_narrow(out.data, out_bytes, i, narrow_encode(fo, as_double(x[i]), saturate));
    });
  }
}

}  // namespace

void cast(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t n = element_count(in);
  if (is_narrow_float(in.dtype) || is_narrow_float(out.dtype)) {
    // Artifacts of ABI 1.1/1.2 pass no int attributes: saturate 1 (they cannot name these types anyway).
    const bool saturate = args.n_int_attrs < 1 || args.int_attrs[HIPDNN_EP_KERNEL_CAST_INT_ATTR_SATURATE] != 0;
    cast_narrow(in, out, n, saturate);
    return;
  }
  dispatch_any(in.dtype, "cast", [&](auto in_tag) {
    using TIn = typename decltype(in_tag)::type;
    dispatch_any(out.dtype, "cast", [&](auto out_tag) {
      using TOut = typename decltype(out_tag)::type;
      const auto* x = static_cast<const TIn*>(in.data);
      auto* y = static_cast<TOut*>(out.data);
      for (int64_t i = 0; i < n; ++i) y[i] = convert<TOut>(x[i]);
    });
  });
}

void where(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& cond = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& x = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& y = args.inputs[2];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const Dims shape = dims_of(out);
  const std::array<Dims, 4> strides{contiguous_strides(shape), broadcast_strides(dims_of(cond), shape),
                                    broadcast_strides(dims_of(x), shape), broadcast_strides(dims_of(y), shape)};
  dispatch_by_size(dtype_size(out.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* po = static_cast<T*>(out.data);
    const auto* pc = static_cast<const uint8_t*>(cond.data);
    const auto* px = static_cast<const T*>(x.data);
    const auto* py = static_cast<const T*>(y.data);
    for_each_row<4>(shape, strides, [&](const std::array<int64_t, 4>& off, int64_t n, const std::array<int64_t, 4>& st) {
      for (int64_t i = 0; i < n; ++i) {
        po[off[0] + i * st[0]] = pc[off[1] + i * st[1]] ? px[off[2] + i * st[2]] : py[off[3] + i * st[3]];
      }
    });
  });
}

// ---------------------------------------------------------------- range, fill

void range(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const auto* params = static_cast<const int64_t*>(args.inputs[0].data);
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t n = element_count(out);
  const auto start = static_cast<uint64_t>(params[0]);
  const auto delta = static_cast<uint64_t>(params[1]);
  // unsigned arithmetic: wraps instead of overflowing
  if (out.dtype == HIPDNN_EP_DTYPE_INT32) {
    auto* y = static_cast<int32_t*>(out.data);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int32_t>(start + static_cast<uint64_t>(i) * delta);
  } else {
    auto* y = static_cast<int64_t*>(out.data);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int64_t>(start + static_cast<uint64_t>(i) * delta);
  }
}

void fill(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t n = element_count(out);
  const auto bits = static_cast<uint64_t>(args.int_attrs[HIPDNN_EP_KERNEL_FILL_INT_ATTR_BITS]);
  dispatch_by_size(dtype_size(out.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value;
    std::memcpy(&value, &bits, sizeof(T));  // little-endian: the low bytes
    auto* y = static_cast<T*>(out.data);
    for (int64_t i = 0; i < n; ++i) y[i] = value;
  });
}

}  // namespace hipdnn_ep::kernels::cpu
