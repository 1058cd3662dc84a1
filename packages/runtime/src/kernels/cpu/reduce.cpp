// CPU reduction kernel: every ONNX reduction (hipdnn_ep_reduce_op) over a set of axes.
//
// The input is walked once in memory order; each element is folded into the
// accumulator of its output position (the output viewed with stride 0 on the
// reduced axes). Floats accumulate in double, integers in wrapping 64-bit.
// Over an empty set, sum is 0, mean is NaN (0 / 0) and max is -inf for
// floats or the dtype's minimum for integers (as ONNX ReduceMax specifies); min is
// +inf or the maximum, prod 1, L1/L2/sum-square 0, log-sum and log-sum-exp -inf.
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// The accumulator's start value for op (the result over an empty set, before finish()).
template <typename Acc, typename C>
Acc reduce_init(int64_t op) {
  constexpr bool kFloat = std::is_floating_point_v<C>;
  switch (op) {
    case HIPDNN_EP_REDUCE_OP_MAX:
      if constexpr (kFloat) return -std::numeric_limits<double>::infinity();
      else return static_cast<Acc>(std::numeric_limits<C>::min());
    case HIPDNN_EP_REDUCE_OP_MIN:
      if constexpr (kFloat) return std::numeric_limits<double>::infinity();
      else return static_cast<Acc>(std::numeric_limits<C>::max());
    case HIPDNN_EP_REDUCE_OP_PROD: return Acc{1};
    default: return Acc{0};
  }
}

// Folds v into a; integers wrap (Acc is unsigned), floats NaN-propagate in MAX and MIN.
template <typename Acc, typename C>
void reduce_fold(int64_t op, Acc& a, C v, double shift) {
  constexpr bool kFloat = std::is_floating_point_v<C>;
  switch (op) {
    case HIPDNN_EP_REDUCE_OP_MAX:
    case HIPDNN_EP_REDUCE_OP_MIN: {
      const bool is_max = op == HIPDNN_EP_REDUCE_OP_MAX;
      if constexpr (kFloat) {
        if (std::isnan(v) || (is_max ? v > a : v < a)) a = v;  // NaN, once seen, stays
      } else {
        if (is_max ? v > static_cast<C>(a) : v < static_cast<C>(a)) a = static_cast<Acc>(v);
      }
      return;
    }
    case HIPDNN_EP_REDUCE_OP_PROD: a = static_cast<Acc>(a * static_cast<Acc>(v)); return;
    case HIPDNN_EP_REDUCE_OP_L1:
      if constexpr (std::is_unsigned_v<C>) a += static_cast<Acc>(v);
      else a += v < C{0} ? Acc{0} - static_cast<Acc>(v) : static_cast<Acc>(v);
      return;
    case HIPDNN_EP_REDUCE_OP_L2:
    case HIPDNN_EP_REDUCE_OP_SUM_SQUARE: a += static_cast<Acc>(v) * static_cast<Acc>(v); return;
    case HIPDNN_EP_REDUCE_OP_LOG_SUM_EXP:
      if constexpr (kFloat) a += std::exp(static_cast<double>(v) - shift);
      return;
    default: a += static_cast<Acc>(v); return;  // SUM, MEAN, LOG_SUM
  }
}

template <typename T>
void reduce_typed(int64_t op, const hipdnn_ep_tensor_ref_t& in, const std::vector<bool>& reduced,
                  const hipdnn_ep_tensor_ref_t& out) {
  using C = typename ComputeType<T>::type;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  using Acc = std::conditional_t<kFloat, double, uint64_t>;
  const Dims dims = dims_of(in);
  Dims kept = dims;
  int64_t reduced_count = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d]) {
      reduced_count *= dims[d];
      kept[d] = 1;
    }
  }
  const int64_t out_count = element_count(kept);
  // Output strides over the input's shape: 0 along reduced axes.
  Dims out_strides = contiguous_strides(kept);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d]) out_strides[d] = 0;
  }
  const std::array<Dims, 2> strides{contiguous_strides(dims), out_strides};
  const T* x = static_cast<const T*>(in.data);
  auto pass = [&](int64_t pass_op, std::vector<Acc>& acc, const std::vector<Acc>* shift) {
    for_each_row<2>(dims, strides, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t j = off[1] + i * st[1];
        const double s = shift ? static_cast<double>((*shift)[j]) : 0.0;
        reduce_fold<Acc, C>(pass_op, acc[j], load(x, off[0] + i * st[0]), s);
      }
    });
  };
  std::vector<Acc> acc(static_cast<size_t>(out_count), reduce_init<Acc, C>(op));
  // LogSumExp: the maximum first, then sum(exp(x - max)) (no overflow for large x).
  std::vector<Acc> max;
  if (op == HIPDNN_EP_REDUCE_OP_LOG_SUM_EXP) {
    max.assign(static_cast<size_t>(out_count), reduce_init<Acc, C>(HIPDNN_EP_REDUCE_OP_MAX));
    pass(HIPDNN_EP_REDUCE_OP_MAX, max, nullptr);
  }
  pass(op, acc, max.empty() ? nullptr : &max);
  T* y = static_cast<T*>(out.data);
  for (int64_t j = 0; j < out_count; ++j) {
    if constexpr (kFloat) {
      double value = acc[j];
      switch (op) {
        case HIPDNN_EP_REDUCE_OP_MEAN: value /= static_cast<double>(reduced_count); break;
        case HIPDNN_EP_REDUCE_OP_L2: value = std::sqrt(value); break;
        case HIPDNN_EP_REDUCE_OP_LOG_SUM: value = std::log(value); break;
        case HIPDNN_EP_REDUCE_OP_LOG_SUM_EXP:
          // an infinite or NaN maximum is the result (and -inf over an empty set)
          value = std::isfinite(max[j]) ? std::log(value) + max[j] : max[j];
          break;
        default: break;
      }
      store(y, j, static_cast<C>(value));
    } else {
      store(y, j, static_cast<C>(acc[j]));  // modulo 2^bits, like the sum itself
    }
  }
}

}  // namespace

void reduce(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const std::vector<bool> reduced = reduced_dims(args.inputs[1], static_cast<size_t>(in.rank));
  const int64_t op = args.int_attrs[HIPDNN_EP_KERNEL_REDUCE_INT_ATTR_OP];
  if (in.dtype == HIPDNN_EP_DTYPE_FLOAT64) return reduce_typed<double>(op, in, reduced, args.outputs[0]);
  dispatch_numeric(in.dtype, "reduce", [&](auto tag) {
    reduce_typed<typename decltype(tag)::type>(op, in, reduced, args.outputs[0]);
  });
}

namespace {

// CumSum accumulates integers unsigned (they wrap), floats in their compute type.
template <typename C, bool = std::is_integral_v<C>>
struct CumsumAccumulator {
  using type = C;
};
template <typename C>
struct CumsumAccumulator<C, true> {
  using type = std::make_unsigned_t<C>;
};

}  // namespace

void cumsum(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_CUMSUM_INT_ATTR_AXIS]);
  const bool exclusive = args.int_attrs[HIPDNN_EP_KERNEL_CUMSUM_INT_ATTR_EXCLUSIVE] != 0;
  const bool reverse = args.int_attrs[HIPDNN_EP_KERNEL_CUMSUM_INT_ATTR_REVERSE] != 0;
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t len = dims[axis];
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  dispatch_numeric(in.dtype, "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename ComputeType<T>::type;
    using U = typename CumsumAccumulator<C>::type;
    const T* x = static_cast<const T*>(in.data);
    T* y = static_cast<T*>(args.outputs[0].data);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t r = 0; r < inner; ++r) {
        U acc{0};
        for (int64_t step = 0; step < len; ++step) {
          const int64_t a = reverse ? len - 1 - step : step;
          const int64_t at = (o * len + a) * inner + r;
          const U v = static_cast<U>(load(x, at));
          if (!exclusive) acc = static_cast<U>(acc + v);
          store(y, at, static_cast<C>(acc));
          if (exclusive) acc = static_cast<U>(acc + v);
        }
      }
    }
  });
}

}  // namespace hipdnn_ep::kernels::cpu
