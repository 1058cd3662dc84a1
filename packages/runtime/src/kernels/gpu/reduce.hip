// GPU reduction kernel: every ONNX reduction (hipdnn_ep_reduce_op) over a set of axes.
//
// One block per output element: its threads stride over the reduced
// positions, then combine in shared memory. Floats accumulate in double,
// integers in wrapping 64-bit, as on the CPU backend; over an empty set sum
// is 0, mean NaN and max -inf (floats) or the dtype's minimum (integers), min +inf or the maximum,
// prod 1, log-sum and log-sum-exp -inf.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

// How partial results combine: the extremes, products, or sums (every other op, after a map).
enum class Fold { kMax, kMin, kProd, kSum };

template <int64_t Op>
constexpr Fold fold_of() {
  return Op == HIPDNN_EP_REDUCE_OP_MAX ? Fold::kMax
         : Op == HIPDNN_EP_REDUCE_OP_MIN ? Fold::kMin
         : Op == HIPDNN_EP_REDUCE_OP_PROD ? Fold::kProd
                                          : Fold::kSum;
}

template <typename Acc, bool kFloat, Fold F>
struct Combine {
  __device__ __forceinline__ Acc operator()(Acc a, Acc b) const {
    if constexpr (F == Fold::kSum) {
      return a + b;  // unsigned addition wraps for integers
    } else if constexpr (F == Fold::kProd) {
      return a * b;  // unsigned multiplication wraps for integers
    } else {
      if constexpr (kFloat) {
        if (isnan(a) || isnan(b)) return NAN;  // NaN, once seen, stays
      }
      if constexpr (F == Fold::kMax) return a > b ? a : b;  // Acc is the signed value for integers
      else return a < b ? a : b;
    }
  }
};

// One element's contribution (L1: |x|, L2 and SUM_SQUARE: x * x, LOG_SUM_EXP: exp(x - shift)).
template <int64_t Op, typename Acc, typename C>
__device__ __forceinline__ Acc reduce_map(C v, double shift) {
  if constexpr (Op == HIPDNN_EP_REDUCE_OP_L1 && std::is_unsigned_v<C>) {
    return static_cast<Acc>(v);
  } else if constexpr (Op == HIPDNN_EP_REDUCE_OP_L1) {
    return v < C{0} ? Acc{0} - static_cast<Acc>(v) : static_cast<Acc>(v);
  } else if constexpr (Op == HIPDNN_EP_REDUCE_OP_L2 || Op == HIPDNN_EP_REDUCE_OP_SUM_SQUARE) {
    return static_cast<Acc>(v) * static_cast<Acc>(v);
  } else if constexpr (Op == HIPDNN_EP_REDUCE_OP_LOG_SUM_EXP) {
    return exp(static_cast<double>(v) - shift);
  } else {
    return static_cast<Acc>(v);
  }
}

template <typename Acc, typename C, Fold F>
__device__ __forceinline__ Acc fold_init() {
  constexpr bool kFloat = std::is_floating_point_v<C>;
  if constexpr (F == Fold::kMax) {
    if constexpr (kFloat) return -INFINITY;
    else return static_cast<Acc>(std::numeric_limits<C>::min());
  } else if constexpr (F == Fold::kMin) {
    if constexpr (kFloat) return INFINITY;
    else return static_cast<Acc>(std::numeric_limits<C>::max());
  } else if constexpr (F == Fold::kProd) {
    return Acc{1};
  } else {
    return Acc{0};
  }
}

template <typename T, int64_t Op>
__global__ void reduce_kernel(const T* x, T* y, Layout<1> kept, Layout<1> reduced, int64_t out_count,
                              int64_t reduced_count) {
  using C = typename Compute<T>::type;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  constexpr Fold F = fold_of<Op>();
  constexpr bool kExtreme = F == Fold::kMax || F == Fold::kMin;
  // Extremes of integers compare the values (signed or unsigned, widened to 64 bits); sums and
  // products wrap in unsigned 64-bit.
  using Extreme = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
  using Acc = std::conditional_t<kFloat, double, std::conditional_t<kExtreme, Extreme, uint64_t>>;
  __shared__ Acc shared[kBlock];
  const Combine<Acc, kFloat, F> combine;
  for (int64_t j = blockIdx.x; j < out_count; j += gridDim.x) {
    int64_t base[1];
    offsets_at(kept, j, base);
    // LogSumExp: the maximum first, then sum(exp(x - max)) (no overflow for large x).
    double shift = 0.0;
    if constexpr (Op == HIPDNN_EP_REDUCE_OP_LOG_SUM_EXP) {
      const Combine<double, true, Fold::kMax> max_of;
      double m = -INFINITY;
      for (int64_t r = threadIdx.x; r < reduced_count; r += blockDim.x) {
        int64_t off[1];
        offsets_at(reduced, r, off);
        m = max_of(m, static_cast<double>(load(x, base[0] + off[0])));
      }
      shift = block_reduce(m, max_of, reinterpret_cast<double*>(shared));
    }
    Acc acc = fold_init<Acc, C, F>();
    for (int64_t r = threadIdx.x; r < reduced_count; r += blockDim.x) {
      int64_t off[1];
      offsets_at(reduced, r, off);
      acc = combine(acc, reduce_map<Op, Acc>(load(x, base[0] + off[0]), shift));
    }
    acc = block_reduce(acc, combine, shared);
    if (threadIdx.x == 0) {
      if constexpr (kFloat) {
        double value = acc;
        if constexpr (Op == HIPDNN_EP_REDUCE_OP_MEAN) value /= static_cast<double>(reduced_count);
        else if constexpr (Op == HIPDNN_EP_REDUCE_OP_L2) value = sqrt(value);
        else if constexpr (Op == HIPDNN_EP_REDUCE_OP_LOG_SUM) value = log(value);
        // an infinite or NaN maximum is the result (and -inf over an empty set)
        else if constexpr (Op == HIPDNN_EP_REDUCE_OP_LOG_SUM_EXP) value = isfinite(shift) ? log(value) + shift : shift;
        store(y, j, static_cast<C>(value));
      } else {
        store(y, j, static_cast<C>(acc));  // modulo 2^bits, like the sum itself
      }
    }
  }
}

template <typename T>
void reduce_typed(hipdnn_ep_state_t* state, int64_t op, const hipdnn_ep_tensor_ref_t& in,
                  const std::vector<bool>& is_reduced, const hipdnn_ep_tensor_ref_t& out) {
  using C = typename Compute<T>::type;
  const Dims dims = dims_of(in);
  Dims kept_dims = dims, reduced_dims_only = dims;
  int64_t reduced_count = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (is_reduced[d]) {
      reduced_count *= dims[d];
      kept_dims[d] = 1;
    } else {
      reduced_dims_only[d] = 1;
    }
  }
  const int64_t out_count = element_count(kept_dims);
  if (out_count == 0) return;
  const Dims strides = contiguous_strides(dims);
  // A zero-size reduced dim: no positions to visit (the layouts keep it out).
  const Layout<1> kept = make_layout<1>(kept_dims, {strides});
  const Layout<1> reduced =
      reduced_count == 0 ? Layout<1>{} : make_layout<1>(reduced_dims_only, {strides});
  const unsigned threads = reduced_count > 64 ? kBlock : 32;
  const unsigned grid = static_cast<unsigned>(out_count < 65535 * 8 ? out_count : 65535 * 8);
  const hipStream_t stream = current_stream(state);
  const T* x = static_cast<const T*>(in.data);
  T* y = static_cast<T*>(out.data);
  switch (op) {
#define HIPDNN_EP_REDUCE_CASE(name)                                                                           \
  case HIPDNN_EP_REDUCE_OP_##name:                                                                            \
    reduce_kernel<T, HIPDNN_EP_REDUCE_OP_##name><<<grid, threads, 0, stream>>>(x, y, kept, reduced, out_count, \
                                                                               reduced_count);               \
    break;
    HIPDNN_EP_REDUCE_CASE(SUM)
    HIPDNN_EP_REDUCE_CASE(MEAN)
    HIPDNN_EP_REDUCE_CASE(MAX)
    HIPDNN_EP_REDUCE_CASE(MIN)
    HIPDNN_EP_REDUCE_CASE(PROD)
    HIPDNN_EP_REDUCE_CASE(L1)
    HIPDNN_EP_REDUCE_CASE(SUM_SQUARE)
#undef HIPDNN_EP_REDUCE_CASE
    default:
      // the float-only ops (the manifest's dtypes tables; validation checked them)
      if constexpr (std::is_floating_point_v<C>) {
        if (op == HIPDNN_EP_REDUCE_OP_L2) {
          reduce_kernel<T, HIPDNN_EP_REDUCE_OP_L2><<<grid, threads, 0, stream>>>(x, y, kept, reduced, out_count,
                                                                                 reduced_count);
        } else if (op == HIPDNN_EP_REDUCE_OP_LOG_SUM) {
          reduce_kernel<T, HIPDNN_EP_REDUCE_OP_LOG_SUM><<<grid, threads, 0, stream>>>(x, y, kept, reduced, out_count,
                                                                                      reduced_count);
        } else {
          reduce_kernel<T, HIPDNN_EP_REDUCE_OP_LOG_SUM_EXP><<<grid, threads, 0, stream>>>(x, y, kept, reduced,
                                                                                          out_count, reduced_count);
        }
      }
      break;
  }
  check_launch("reduce");
}

// CumSum accumulates integers unsigned (they wrap), floats in their compute type.
template <typename C, bool = std::is_integral_v<C>>
struct CumsumAccumulator {
  using type = C;
};
template <typename C>
struct CumsumAccumulator<C, true> {
  using type = std::make_unsigned_t<C>;
};

// One thread per (outer, inner) line, summing along the axis in order (as the CPU backend).
template <typename T>
__global__ void cumsum_kernel(const T* x, T* y, int64_t lines, int64_t len, int64_t inner, bool exclusive,
                              bool reverse) {
  using C = typename Compute<T>::type;
  using U = typename CumsumAccumulator<C>::type;
  HIPDNN_EP_GRID_STRIDE(line, lines) {
    const int64_t o = line / inner;
    const int64_t r = line % inner;
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

}  // namespace

void cumsum(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_CUMSUM_INT_ATTR_AXIS]);
  const bool exclusive = args.int_attrs[HIPDNN_EP_KERNEL_CUMSUM_INT_ATTR_EXCLUSIVE] != 0;
  const bool reverse = args.int_attrs[HIPDNN_EP_KERNEL_CUMSUM_INT_ATTR_REVERSE] != 0;
  const int64_t len = dims[axis];
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  const int64_t lines = dims_product(dims, 0, axis) * inner;
  if (lines == 0 || len == 0) return;
  const hipStream_t stream = current_stream(state);
  dispatch_numeric_gpu(in.dtype, "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cumsum_kernel<<<grid_for(lines), kBlock, 0, stream>>>(static_cast<const T*>(in.data),
                                                          static_cast<T*>(args.outputs[0].data), lines, len, inner,
                                                          exclusive, reverse);
  });
  check_launch("cumsum");
}

void reduce(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const std::vector<bool> is_reduced = reduced_dims(args.inputs[1], static_cast<size_t>(in.rank));
  const int64_t op = args.int_attrs[HIPDNN_EP_KERNEL_REDUCE_INT_ATTR_OP];
  if (in.dtype == HIPDNN_EP_DTYPE_FLOAT64) return reduce_typed<double>(state, op, in, is_reduced, args.outputs[0]);
  dispatch_numeric_gpu(in.dtype, "reduce", [&](auto tag) {
    reduce_typed<typename decltype(tag)::type>(state, op, in, is_reduced, args.outputs[0]);
  });
}

}  // namespace hipdnn_ep::kernels::gpu
