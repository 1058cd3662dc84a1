// GPU elementwise kernels: binary (with broadcasting), unary, cast, where.
// Semantics follow the CPU backend (kernels/README.md): float16 computes in
// float, signed integer add/sub/mul/neg wrap, integer division truncates and
// division by zero is INVALID_ARGUMENT, cast saturates float -> integer.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/int_pow.h"
#include "kernels/sigmoid.h"
#include "kernels/narrow_float.h"
#include "gpu/gpu_device.h"
#include "kernels/gpu/device_math.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

template <typename T>
__device__ __forceinline__ T wrap_add(T a, T b) {
  using U = WrapUnsigned<T>;  // narrow types in unsigned int: no promotion to signed int
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
__device__ __forceinline__ T wrap_sub(T a, T b) {
  using U = WrapUnsigned<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
__device__ __forceinline__ T wrap_mul(T a, T b) {
  using U = WrapUnsigned<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// Integer Pow: int_pow.h (exact, shared with the other backend)

// One functor per binary op; Int: integer arithmetic (wrapping).
template <int64_t Op, typename C>
struct BinaryOp {
  DataErrorRecord* errors;  // integer division by zero: 0 written, recorded (gpu_common.h: data checks)
  __device__ __forceinline__ auto operator()(C x, C y) const {
    constexpr bool kInt = std::is_integral_v<C> && !std::is_same_v<C, bool>;
    if constexpr (Op == HIPDNN_EP_BINARY_OP_ADD) {
      if constexpr (kInt) return wrap_add(x, y); else return x + y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_SUB) {
      if constexpr (kInt) return wrap_sub(x, y); else return x - y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_MUL) {
      if constexpr (kInt) return wrap_mul(x, y); else return x * y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_DIV) {
      if constexpr (kInt) {
        if (y == 0) {
          report_error(errors, kErrorIntDivByZero);
          return C{0};
        }
        if constexpr (std::is_signed_v<C>) {
          if (y == -1) return wrap_sub(C{0}, x);  // INT_MIN / -1 would trap
        }
        return static_cast<C>(x / y);
      } else {
        return x / y;
      }
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_POW) {
      if constexpr (kInt) return int_pow(x, y);
      else if constexpr (std::is_same_v<C, double>) return pow(x, y);
      else return static_cast<C>(powf(x, y));
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_EQUAL) {
      return x == y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_LESS) {
      return x < y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_GREATER) {
      return x > y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_GREATER_OR_EQUAL) {
      return x >= y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_LESS_OR_EQUAL) {
      return x <= y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_AND) {
      return x && y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_OR) {
      return x || y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_XOR) {
      return x != y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_MIN) {
      if constexpr (kInt) return x < y ? x : y; else return isnan(x) || x < y ? x : y;  // NaN wins, as on the CPU
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_MAX) {
      if constexpr (kInt) return x > y ? x : y; else return isnan(x) || x > y ? x : y;
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_SILU_MUL) {  // floats only (validated)
      return x * sigmoid(x) * y;
    } else {  // MOD (divisor's sign, integers only) and FMOD (dividend's sign)
      if constexpr (kInt) {
        if (y == 0) {
          report_error(errors, kErrorIntDivByZero);
          return C{0};
        }
        if constexpr (std::is_signed_v<C>) {
          if (y == -1) return C{0};  // INT_MIN % -1 would trap
          const C r = static_cast<C>(x % y);
          if (Op == HIPDNN_EP_BINARY_OP_MOD && r != 0 && ((r < 0) != (y < 0))) return static_cast<C>(r + y);
          return r;
        } else {
          return static_cast<C>(x % y);
        }
      } else if constexpr (std::is_same_v<C, double>) {
        return fmod(x, y);
      } else {
        return static_cast<C>(fmodf(x, y));
      }
    }
  }
};

// The bitwise ops of integers (BITWISE_AND/OR/XOR, SHIFT_LEFT/RIGHT), as the CPU backend: a shift
// amount below 0 or at least the width shifts everything out (a negative signed value shifted right
// leaves -1), a left shift wraps, a signed right shift is arithmetic.
template <int64_t Op, typename C>
struct BitwiseOp {
  DataErrorRecord* errors;  // unused: the shape of BinaryOp, for launch_binary
  __device__ __forceinline__ C operator()(C x, C y) const {
    if constexpr (Op == HIPDNN_EP_BINARY_OP_BITWISE_AND) {
      return static_cast<C>(x & y);
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_BITWISE_OR) {
      return static_cast<C>(x | y);
    } else if constexpr (Op == HIPDNN_EP_BINARY_OP_BITWISE_XOR) {
      return static_cast<C>(x ^ y);
    } else {
      constexpr int kWidth = static_cast<int>(sizeof(C) * 8);
      constexpr bool kLeft = Op == HIPDNN_EP_BINARY_OP_SHIFT_LEFT;
      bool out_of_range = false;
      if constexpr (std::is_signed_v<C>) out_of_range = y < 0 || y >= kWidth;
      else out_of_range = y >= kWidth;
      if (out_of_range) {
        if constexpr (std::is_signed_v<C>) return !kLeft && x < 0 ? C(-1) : C(0);
        else return C(0);
      }
      using U = std::make_unsigned_t<C>;
      if constexpr (kLeft) return static_cast<C>(static_cast<U>(static_cast<U>(x) << y));
      else return static_cast<C>(x >> y);
    }
  }
};

template <typename TIn, typename TOut, typename Fn>
__global__ void binary_kernel(const TIn* a, const TIn* b, TOut* out, Layout<3> l, int64_t n, Fn fn) {
  allow_dependents();  // a GEMV after this one may launch meanwhile (gpu_common.h)
  HIPDNN_EP_GRID_STRIDE(i, n) {
    int64_t off[3];
    offsets_at(l, i, off);
    store(out, off[0], fn(load(a, off[1]), load(b, off[2])));
  }
}

// Same shape, contiguous: no index arithmetic.
template <typename TIn, typename TOut, typename Fn>
__global__ void binary_dense_kernel(const TIn* a, const TIn* b, TOut* out, int64_t n, Fn fn) {
  allow_dependents();  // a GEMV after this one may launch meanwhile (gpu_common.h)
  HIPDNN_EP_GRID_STRIDE(i, n) { store(out, i, fn(load(a, i), load(b, i))); }
}

template <typename TIn, typename TOut, int64_t Op, typename Functor = BinaryOp<Op, typename Compute<TIn>::type>>
void launch_binary(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t& a, const hipdnn_ep_tensor_ref_t& b,
                   const hipdnn_ep_tensor_ref_t& out) {
  const Dims shape = dims_of(out);
  const int64_t n = element_count(shape);
  if (n == 0) return;
  const Functor fn{gpu_device(state).data_errors()};
  const hipStream_t stream = current_stream(state);
  const auto* pa = static_cast<const TIn*>(a.data);
  const auto* pb = static_cast<const TIn*>(b.data);
  auto* po = static_cast<TOut*>(out.data);
  if (dims_of(a) == shape && dims_of(b) == shape) {
    binary_dense_kernel<<<grid_for(n), kBlock, 0, stream>>>(pa, pb, po, n, fn);
  } else {
    const Layout<3> l = make_layout<3>(shape, {contiguous_strides(shape), broadcast_strides(dims_of(a), shape),
                                               broadcast_strides(dims_of(b), shape)});
    binary_kernel<<<grid_for(n), kBlock, 0, stream>>>(pa, pb, po, l, n, fn);
  }
  check_launch("binary");
}

template <typename T>
void binary_typed(hipdnn_ep_state_t* state, int64_t op, const hipdnn_ep_tensor_ref_t& a,
                  const hipdnn_ep_tensor_ref_t& b, const hipdnn_ep_tensor_ref_t& out) {
  using C = typename Compute<T>::type;
  switch (op) {
    case HIPDNN_EP_BINARY_OP_ADD: return launch_binary<T, T, HIPDNN_EP_BINARY_OP_ADD>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_SUB: return launch_binary<T, T, HIPDNN_EP_BINARY_OP_SUB>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_MUL: return launch_binary<T, T, HIPDNN_EP_BINARY_OP_MUL>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_DIV: return launch_binary<T, T, HIPDNN_EP_BINARY_OP_DIV>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_POW:
      return launch_binary<T, T, HIPDNN_EP_BINARY_OP_POW>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_EQUAL: return launch_binary<T, gbool, HIPDNN_EP_BINARY_OP_EQUAL>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_LESS: return launch_binary<T, gbool, HIPDNN_EP_BINARY_OP_LESS>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_GREATER: return launch_binary<T, gbool, HIPDNN_EP_BINARY_OP_GREATER>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_GREATER_OR_EQUAL:
      return launch_binary<T, gbool, HIPDNN_EP_BINARY_OP_GREATER_OR_EQUAL>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_LESS_OR_EQUAL:
      return launch_binary<T, gbool, HIPDNN_EP_BINARY_OP_LESS_OR_EQUAL>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_MIN: return launch_binary<T, T, HIPDNN_EP_BINARY_OP_MIN>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_MAX: return launch_binary<T, T, HIPDNN_EP_BINARY_OP_MAX>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_MOD:
      if constexpr (std::is_integral_v<C>) return launch_binary<T, T, HIPDNN_EP_BINARY_OP_MOD>(state, a, b, out);
      break;
    case HIPDNN_EP_BINARY_OP_FMOD: return launch_binary<T, T, HIPDNN_EP_BINARY_OP_FMOD>(state, a, b, out);
    case HIPDNN_EP_BINARY_OP_SILU_MUL:
      if constexpr (std::is_floating_point_v<C>) {
        return launch_binary<T, T, HIPDNN_EP_BINARY_OP_SILU_MUL>(state, a, b, out);
      }
      break;
    default: break;
  }
  fail(HIPDNN_EP_STATUS_INTERNAL, "binary op " + std::to_string(op) + " reached the GPU kernel unvalidated");
}

template <typename T>
void bitwise_typed(hipdnn_ep_state_t* state, int64_t op, const hipdnn_ep_tensor_ref_t& a,
                   const hipdnn_ep_tensor_ref_t& b, const hipdnn_ep_tensor_ref_t& out) {
  switch (op) {
#define HIPDNN_EP_BITWISE_CASE(name)                                                                       \
  case HIPDNN_EP_BINARY_OP_##name:                                                                         \
    return launch_binary<T, T, HIPDNN_EP_BINARY_OP_##name, BitwiseOp<HIPDNN_EP_BINARY_OP_##name, T>>(state, a, b, \
                                                                                                     out);
    HIPDNN_EP_BITWISE_CASE(BITWISE_AND)
    HIPDNN_EP_BITWISE_CASE(BITWISE_OR)
    HIPDNN_EP_BITWISE_CASE(BITWISE_XOR)
    HIPDNN_EP_BITWISE_CASE(SHIFT_LEFT)
    HIPDNN_EP_BITWISE_CASE(SHIFT_RIGHT)
#undef HIPDNN_EP_BITWISE_CASE
    default: break;
  }
  fail(HIPDNN_EP_STATUS_INTERNAL, "binary op " + std::to_string(op) + " reached the GPU bitwise kernel unvalidated");
}

template <typename T>
struct BitwiseNotOp {
  __device__ __forceinline__ T operator()(T x) const { return static_cast<T>(~x); }
};

// ---------------------------------------------------------------- unary

template <int64_t Op, typename C>
struct UnaryOp {
  __device__ __forceinline__ auto operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>) {
      return !x;  // NOT
    } else if constexpr (std::is_integral_v<C>) {
      if constexpr (!std::is_signed_v<C>) {  // ABS and SIGN (Relu and Neg are refused for unsigned)
        if constexpr (Op == HIPDNN_EP_UNARY_OP_SIGN) return static_cast<C>(x != 0);
        else return x;
      } else if constexpr (Op == HIPDNN_EP_UNARY_OP_RELU) {
        return x < 0 ? C{0} : x;
      } else if constexpr (Op == HIPDNN_EP_UNARY_OP_ABS) {
        return x < 0 ? wrap_sub(C{0}, x) : x;
      } else if constexpr (Op == HIPDNN_EP_UNARY_OP_SIGN) {
        return static_cast<C>((x > 0) - (x < 0));
      } else {
        return wrap_sub(C{0}, x);  // NEG
      }
    } else if constexpr (Op == HIPDNN_EP_UNARY_OP_IS_NAN) {
      return static_cast<bool>(isnan(x));
    } else {
      if constexpr (Op == HIPDNN_EP_UNARY_OP_RELU) return x < 0.0f ? 0.0f : x;  // NaN stays NaN
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_SIGMOID) return sigmoid(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_TANH) return tanhf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_EXP) return expf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_LOG) return logf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_SQRT) return sqrtf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_NEG) return -x;
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ERF) return erff(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_GELU_ERF) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ABS) return fabsf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_FLOOR) return floorf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_CEIL) return ceilf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_SIGN) return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? 0.0f : x;
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_RECIPROCAL) return 1.0f / x;
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_SIN) return sinf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_COS) return cosf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_TAN) return tanf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ASIN) return asinf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ACOS) return acosf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ATAN) return atanf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_SINH) return sinhf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_COSH) return coshf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ASINH) return asinhf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ACOSH) return acoshf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ATANH) return atanhf(x);
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_ROUND) return rintf(x);  // halves to even
      else if constexpr (Op == HIPDNN_EP_UNARY_OP_SOFTSIGN) return x / (1.0f + fabsf(x));
      else return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));  // GELU_TANH
    }
  }
};

template <typename T, typename TOut, typename Fn>
__global__ void unary_kernel(const T* x, TOut* y, int64_t n, Fn fn) {
  allow_dependents();  // a GEMV after this one may launch meanwhile (gpu_common.h)
  HIPDNN_EP_GRID_STRIDE(i, n) { store(y, i, fn(load(x, i))); }
}

// The same over 16-byte vectors of kVec elements (x and y 16-byte aligned): `vectors` whole vectors, then the
// n - vectors * kVec elements left, one per thread of the first ones. A scalar thread moves 2 or 4 bytes
// per load, far from the memory's rate on large tensors (GELU of a BERT FFN at batch 8: 3M elements).
template <typename T, int kVec, typename Fn>
__global__ void unary_vector_kernel(const T* x, T* y, int64_t vectors, int64_t n, Fn fn) {
  allow_dependents();  // a GEMV after this one may launch meanwhile (gpu_common.h)
  HIPDNN_EP_GRID_STRIDE(v, vectors) {
    const uint4 in = reinterpret_cast<const uint4*>(x)[v];
    uint4 out;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      store(reinterpret_cast<T*>(&out), j, fn(load(reinterpret_cast<const T*>(&in), j)));
    }
    reinterpret_cast<uint4*>(y)[v] = out;
  }
  const int64_t tail = vectors * kVec + blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (tail < n) store(y, tail, fn(load(x, tail)));
}

// TOut: T, or gbool for IS_NAN.
template <typename T, int64_t Op, typename TOut = T>
void launch_unary(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t& in, const hipdnn_ep_tensor_ref_t& out) {
  const int64_t n = element_count(in);
  if (n == 0) return;
  const UnaryOp<Op, typename Compute<T>::type> fn{};
  constexpr int kVec = 16 / sizeof(T);
  if constexpr (std::is_same_v<T, TOut> && (sizeof(T) == 2 || sizeof(T) == 4)) {
    if (n >= 2 * kVec && aligned(in.data, 16) && aligned(out.data, 16)) {
      const int64_t vectors = n / kVec;
      unary_vector_kernel<T, kVec><<<grid_for(vectors), kBlock, 0, current_stream(state)>>>(
          static_cast<const T*>(in.data), static_cast<T*>(out.data), vectors, n, fn);
      check_launch("unary");
      return;
    }
  }
  unary_kernel<<<grid_for(n), kBlock, 0, current_stream(state)>>>(static_cast<const T*>(in.data),
                                                                   static_cast<TOut*>(out.data), n, fn);
  check_launch("unary");
}

template <typename T>
void unary_typed(hipdnn_ep_state_t* state, int64_t op, const hipdnn_ep_tensor_ref_t& in,
                 const hipdnn_ep_tensor_ref_t& out) {
  using C = typename Compute<T>::type;
  if constexpr (std::is_integral_v<C>) {
    if (op == HIPDNN_EP_UNARY_OP_RELU) return launch_unary<T, HIPDNN_EP_UNARY_OP_RELU>(state, in, out);
    if (op == HIPDNN_EP_UNARY_OP_NEG) return launch_unary<T, HIPDNN_EP_UNARY_OP_NEG>(state, in, out);
    if (op == HIPDNN_EP_UNARY_OP_ABS) return launch_unary<T, HIPDNN_EP_UNARY_OP_ABS>(state, in, out);
    if (op == HIPDNN_EP_UNARY_OP_SIGN) return launch_unary<T, HIPDNN_EP_UNARY_OP_SIGN>(state, in, out);
  } else {
    if (op == HIPDNN_EP_UNARY_OP_IS_NAN) return launch_unary<T, HIPDNN_EP_UNARY_OP_IS_NAN, gbool>(state, in, out);
    switch (op) {
#define HIPDNN_EP_UNARY_CASE(name) \
  case HIPDNN_EP_UNARY_OP_##name: return launch_unary<T, HIPDNN_EP_UNARY_OP_##name>(state, in, out);
      HIPDNN_EP_UNARY_CASE(RELU)
      HIPDNN_EP_UNARY_CASE(SIGMOID)
      HIPDNN_EP_UNARY_CASE(TANH)
      HIPDNN_EP_UNARY_CASE(EXP)
      HIPDNN_EP_UNARY_CASE(LOG)
      HIPDNN_EP_UNARY_CASE(SQRT)
      HIPDNN_EP_UNARY_CASE(NEG)
      HIPDNN_EP_UNARY_CASE(ERF)
      HIPDNN_EP_UNARY_CASE(GELU_ERF)
      HIPDNN_EP_UNARY_CASE(GELU_TANH)
      HIPDNN_EP_UNARY_CASE(ABS)
      HIPDNN_EP_UNARY_CASE(FLOOR)
      HIPDNN_EP_UNARY_CASE(CEIL)
      HIPDNN_EP_UNARY_CASE(SIGN)
      HIPDNN_EP_UNARY_CASE(RECIPROCAL)
      HIPDNN_EP_UNARY_CASE(SIN)
      HIPDNN_EP_UNARY_CASE(COS)
      HIPDNN_EP_UNARY_CASE(TAN)
      HIPDNN_EP_UNARY_CASE(ASIN)
      HIPDNN_EP_UNARY_CASE(ACOS)
      HIPDNN_EP_UNARY_CASE(ATAN)
      HIPDNN_EP_UNARY_CASE(SINH)
      HIPDNN_EP_UNARY_CASE(COSH)
      HIPDNN_EP_UNARY_CASE(ASINH)
      HIPDNN_EP_UNARY_CASE(ACOSH)
      HIPDNN_EP_UNARY_CASE(ATANH)
      HIPDNN_EP_UNARY_CASE(ROUND)
      HIPDNN_EP_UNARY_CASE(SOFTSIGN)
#undef HIPDNN_EP_UNARY_CASE
      default: break;
    }
  }
  fail(HIPDNN_EP_STATUS_INTERNAL, "unary op " + std::to_string(op) + " reached the GPU kernel unvalidated");
}

// ---------------------------------------------------------------- cast

template <typename T>
__device__ __forceinline__ double as_double(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, gbool>) return v.value != 0 ? 1.0 : 0.0;
  else return static_cast<double>(v);
}

template <typename T>
struct Limits;
template <> struct Limits<uint8_t> { static constexpr uint8_t lo = 0, hi = 255; };
template <> struct Limits<int8_t> { static constexpr int8_t lo = -128, hi = 127; };
template <> struct Limits<int32_t> { static constexpr int32_t lo = INT32_MIN, hi = INT32_MAX; };
template <> struct Limits<int64_t> { static constexpr int64_t lo = INT64_MIN, hi = INT64_MAX; };
template <> struct Limits<int16_t> { static constexpr int16_t lo = INT16_MIN, hi = INT16_MAX; };
template <> struct Limits<uint16_t> { static constexpr uint16_t lo = 0, hi = UINT16_MAX; };
template <> struct Limits<uint32_t> { static constexpr uint32_t lo = 0, hi = UINT32_MAX; };
template <> struct Limits<uint64_t> { static constexpr uint64_t lo = 0, hi = UINT64_MAX; };

template <typename TOut>
__device__ __forceinline__ TOut float_to_int(double v) {
  if (isnan(v)) return TOut{0};
  if (v <= static_cast<double>(Limits<TOut>::lo)) return Limits<TOut>::lo;
  if (v >= static_cast<double>(Limits<TOut>::hi)) return Limits<TOut>::hi;
  return static_cast<TOut>(v);
}

template <typename TOut, typename TIn>
__device__ __forceinline__ TOut convert(TIn v) {
  constexpr bool kInIsFloat = std::is_same_v<TIn, __half> || std::is_floating_point_v<TIn>;
  if constexpr (std::is_same_v<TOut, gbool>) {
    if constexpr (std::is_same_v<TIn, gbool>) return gbool{static_cast<uint8_t>(v.value != 0)};
    else if constexpr (kInIsFloat) return gbool{static_cast<uint8_t>(as_double(v) != 0.0)};  // NaN -> true
    else return gbool{static_cast<uint8_t>(v != 0)};
  } else if constexpr (std::is_same_v<TOut, __half>) {
    return __float2half_rn(static_cast<float>(as_double(v)));
  } else if constexpr (std::is_floating_point_v<TOut>) {
    if constexpr (std::is_integral_v<TIn>) return static_cast<TOut>(v);
    else return static_cast<TOut>(as_double(v));
  } else {
    if constexpr (kInIsFloat) return float_to_int<TOut>(as_double(v));
    else if constexpr (std::is_same_v<TIn, gbool>) return static_cast<TOut>(v.value != 0);
    else return static_cast<TOut>(v);  // integer to integer: modulo 2^bits
  }
}

template <typename TIn, typename TOut>
__global__ void cast_kernel(const TIn* x, TOut* y, int64_t n) {
  HIPDNN_EP_GRID_STRIDE(i, n) { y[i] = convert<TOut>(x[i]); }
}

// ---------------------------------------------------------------- where

template <typename T>
__global__ void where_kernel(const uint8_t* cond, const T* x, const T* y, T* out, Layout<4> l, int64_t n) {
  HIPDNN_EP_GRID_STRIDE(i, n) {
    int64_t off[4];
    offsets_at(l, i, off);
    out[off[0]] = cond[off[1]] ? x[off[2]] : y[off[3]];
  }
}

// ---------------------------------------------------------------- range, fill

template <typename T>
__global__ void range_kernel(T* y, int64_t n, uint64_t start, uint64_t delta) {
  HIPDNN_EP_GRID_STRIDE(i, n) { y[i] = static_cast<T>(start + static_cast<uint64_t>(i) * delta); }  // wraps
}

template <typename T>
__global__ void fill_kernel(T* y, int64_t n, T value) {
  HIPDNN_EP_GRID_STRIDE(i, n) { y[i] = value; }
}

}  // namespace

void range(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const auto* params = static_cast<const int64_t*>(args.inputs[0].data);  // host memory
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t n = element_count(out);
  if (n == 0) return;
  const auto start = static_cast<uint64_t>(params[0]);
  const auto delta = static_cast<uint64_t>(params[1]);
  const hipStream_t stream = current_stream(state);
  if (out.dtype == HIPDNN_EP_DTYPE_INT32) {
    range_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<int32_t*>(out.data), n, start, delta);
  } else {
    range_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<int64_t*>(out.data), n, start, delta);
  }
  check_launch("range");
}

void fill(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t n = element_count(out);
  if (n == 0) return;
  const auto bits = static_cast<uint64_t>(args.int_attrs[HIPDNN_EP_KERNEL_FILL_INT_ATTR_BITS]);
  const hipStream_t stream = current_stream(state);
  dispatch_by_size(dtype_size(out.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value;
    memcpy(&value, &bits, sizeof(T));  // little-endian: the low bytes
    fill_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<T*>(out.data), n, value);
  });
  check_launch("fill");
}

void binary(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const int64_t op = args.int_attrs[HIPDNN_EP_KERNEL_BINARY_INT_ATTR_OP];
  if (args.inputs[0].dtype == HIPDNN_EP_DTYPE_BOOL) {
    const auto& a = args.inputs[0];
    const auto& b = args.inputs[1];
    const auto& out = args.outputs[0];
    switch (op) {
      case HIPDNN_EP_BINARY_OP_EQUAL: return launch_binary<gbool, gbool, HIPDNN_EP_BINARY_OP_EQUAL>(state, a, b, out);
      case HIPDNN_EP_BINARY_OP_AND: return launch_binary<gbool, gbool, HIPDNN_EP_BINARY_OP_AND>(state, a, b, out);
      case HIPDNN_EP_BINARY_OP_OR: return launch_binary<gbool, gbool, HIPDNN_EP_BINARY_OP_OR>(state, a, b, out);
      case HIPDNN_EP_BINARY_OP_XOR: return launch_binary<gbool, gbool, HIPDNN_EP_BINARY_OP_XOR>(state, a, b, out);
      default: fail(HIPDNN_EP_STATUS_INTERNAL, "binary op " + std::to_string(op) + " on BOOL reached the GPU kernel unvalidated");
    }
  }
  if (args.inputs[0].dtype == HIPDNN_EP_DTYPE_FLOAT64) {  // the manifest's FLOAT64 ops (all but MOD and the bitwise ones)
    return binary_typed<double>(state, op, args.inputs[0], args.inputs[1], args.outputs[0]);
  }
  if (op >= HIPDNN_EP_BINARY_OP_BITWISE_AND && op <= HIPDNN_EP_BINARY_OP_SHIFT_RIGHT) {
    dispatch_integer(args.inputs[0].dtype, "binary", [&](auto tag) {
      bitwise_typed<typename decltype(tag)::type>(state, op, args.inputs[0], args.inputs[1], args.outputs[0]);
    });
    return;
  }
  dispatch_numeric_gpu(args.inputs[0].dtype, "binary", [&](auto tag) {
    binary_typed<typename decltype(tag)::type>(state, op, args.inputs[0], args.inputs[1], args.outputs[0]);
  });
}

void unary(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const int64_t op = args.int_attrs[HIPDNN_EP_KERNEL_UNARY_INT_ATTR_OP];
  if (op == HIPDNN_EP_UNARY_OP_NOT) return launch_unary<gbool, HIPDNN_EP_UNARY_OP_NOT>(state, args.inputs[0], args.outputs[0]);
  if (op == HIPDNN_EP_UNARY_OP_BITWISE_NOT) {
    const int64_t n = element_count(args.inputs[0]);
    if (n == 0) return;
    dispatch_integer(args.inputs[0].dtype, "unary", [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_kernel<<<grid_for(n), kBlock, 0, current_stream(state)>>>(
          static_cast<const T*>(args.inputs[0].data), static_cast<T*>(args.outputs[0].data), n, BitwiseNotOp<T>{});
    });
    check_launch("unary");
    return;
  }
  dispatch_numeric_gpu(args.inputs[0].dtype, "unary", [&](auto tag) {
    unary_typed<typename decltype(tag)::type>(state, op, args.inputs[0], args.outputs[0]);
  });
}

namespace {

// BFLOAT16 and FLOAT8 (narrow_float.h, shared with the CPU): raw bit patterns of 1 or 2 bytes.
__device__ __forceinline__ uint32_t load_narrow(const void* p, int bytes, int64_t i) {
  return bytes == 1 ? static_cast<const uint8_t*>(p)[i] : static_cast<const uint16_t*>(p)[i];
}
__device__ __forceinline__ void store_narrow(void* p, int bytes, int64_t i, uint32_t v) {
  if (bytes == 1) static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
  else static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v);
}

__global__ void cast_narrow_to_narrow_kernel(const void* x, NarrowFormat fi, int in_bytes, void* y, NarrowFormat fo,
                                             int out_bytes, bool saturate, int64_t n) {
  HIPDNN_EP_GRID_STRIDE(i, n) {
    store_narrow(y, out_bytes, i, narrow_encode(fo, narrow_decode(fi, load_narrow(x, in_bytes, i)), saturate));
  }
}

template <typename TOut>
__global__ void cast_from_narrow_kernel(const void* x, NarrowFormat fi, int in_bytes, TOut* y, int64_t n) {
  HIPDNN_EP_GRID_STRIDE(i, n) { y[i] = convert<TOut>(narrow_decode(fi, load_narrow(x, in_bytes, i))); }
}

template <typename TIn>
__global__ void cast_to_narrow_kernel(const TIn* x, void* y, NarrowFormat fo, int out_bytes, bool saturate, int64_t n) {
  HIPDNN_EP_GRID_STRIDE(i, n) { store_narrow(y, out_bytes, i, narrow_encode(fo, as_double(x[i]), saturate)); }
}

void cast_narrow(hipStream_t stream, const hipdnn_ep_tensor_ref_t& in, const hipdnn_ep_tensor_ref_t& out, int64_t n,
                 bool saturate) {
  const int in_bytes = static_cast<int>(dtype_size(in.dtype));
  const int out_bytes = static_cast<int>(dtype_size(out.dtype));
  if (is_narrow_float(in.dtype) && is_narrow_float(out.dtype)) {
    cast_narrow_to_narrow_kernel<<<grid_for(n), kBlock, 0, stream>>>(in.data, narrow_format(in.dtype), in_bytes, out.data,
                                                                      narrow_format(out.dtype), out_bytes, saturate, n);
  } else if (is_narrow_float(in.dtype)) {
    dispatch_any_gpu(out.dtype, "cast", [&](auto out_tag) {
      using TOut = typename decltype(out_tag)::type;
      cast_from_narrow_kernel<<<grid_for(n), kBlock, 0, stream>>>(in.data, narrow_format(in.dtype), in_bytes,
                                                                  static_cast<TOut*>(out.data), n);
    });
  } else {
    dispatch_any_gpu(in.dtype, "cast", [&](auto in_tag) {
      using TIn = typename decltype(in_tag)::type;
      cast_to_narrow_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const TIn*>(in.data), out.data,
                                                                narrow_format(out.dtype), out_bytes, saturate, n);
    });
  }
}

}  // namespace

void cast(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t n = element_count(in);
  if (n == 0) return;
  const hipStream_t stream = current_stream(state);
  if (is_narrow_float(in.dtype) || is_narrow_float(out.dtype)) {
    // Artifacts of ABI 1.1/1.2 pass no int attributes: saturate 1 (they cannot name these types anyway).
    const bool saturate = args.n_int_attrs < 1 || args.int_attrs[HIPDNN_EP_KERNEL_CAST_INT_ATTR_SATURATE] != 0;
    cast_narrow(stream, in, out, n, saturate);
    check_launch("cast");
    return;
  }
  dispatch_any_gpu(in.dtype, "cast", [&](auto in_tag) {
    using TIn = typename decltype(in_tag)::type;
    dispatch_any_gpu(out.dtype, "cast", [&](auto out_tag) {
      using TOut = typename decltype(out_tag)::type;
      cast_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const TIn*>(in.data), static_cast<TOut*>(out.data),
                                                      n);
    });
  });
  check_launch("cast");
}

void where(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& cond = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& x = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& y = args.inputs[2];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const Dims shape = dims_of(out);
  const int64_t n = element_count(shape);
  if (n == 0) return;
  const Layout<4> l =
      make_layout<4>(shape, {contiguous_strides(shape), broadcast_strides(dims_of(cond), shape),
                             broadcast_strides(dims_of(x), shape), broadcast_strides(dims_of(y), shape)});
  const hipStream_t stream = current_stream(state);
  dispatch_by_size(dtype_size(out.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    where_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const uint8_t*>(cond.data),
                                                     static_cast<const T*>(x.data), static_cast<const T*>(y.data),
                                                     static_cast<T*>(out.data), l, n);
  });
  check_launch("where");
}

}  // namespace hipdnn_ep::kernels::gpu
