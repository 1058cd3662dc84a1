// GPU reduction kernel: sum, mean and max over a set of axes.
//
// One block per output element: its threads stride over the reduced
// positions, then combine in shared memory. Floats accumulate in double,
// integers in wrapping 64-bit, as on the CPU backend; over an empty set sum
// is 0, mean NaN and max -inf (floats) or the dtype's minimum (integers).
#include <cmath>
#include <type_traits>
#include <vector>

#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

template <typename Acc, bool kFloat, bool kMax>
struct Combine {
  __device__ __forceinline__ Acc operator()(Acc a, Acc b) const {
    if constexpr (!kMax) {
      return a + b;  // unsigned addition wraps for integers
    } else if constexpr (kFloat) {
      if (isnan(a) || isnan(b)) return NAN;  // NaN, once seen, stays
      return a > b ? a : b;
    } else {
      return a > b ? a : b;  // Acc is the signed value here
    }
  }
};

template <typename T, int64_t Op>
__global__ void reduce_kernel(const T* x, T* y, Layout<1> kept, Layout<1> reduced, int64_t out_count,
                              int64_t reduced_count) {
  using C = typename Compute<T>::type;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  constexpr bool kMax = Op == HIPDNN_EP_REDUCE_OP_MAX;
  // Max of integers compares signed values; sums wrap in unsigned 64-bit.
  using Acc = std::conditional_t<kFloat, double, std::conditional_t<kMax, int64_t, uint64_t>>;
  __shared__ Acc shared[kBlock];
  Acc init{0};
  if constexpr (kMax) {
    if constexpr (kFloat) init = -INFINITY;
    else init = static_cast<Acc>(std::is_same_v<C, int32_t> ? INT32_MIN : INT64_MIN);
  }
  const Combine<Acc, kFloat, kMax> combine;
  for (int64_t j = blockIdx.x; j < out_count; j += gridDim.x) {
    int64_t base[1];
    offsets_at(kept, j, base);
    Acc acc = init;
    for (int64_t r = threadIdx.x; r < reduced_count; r += blockDim.x) {
      int64_t off[1];
      offsets_at(reduced, r, off);
      acc = combine(acc, static_cast<Acc>(load(x, base[0] + off[0])));
    }
    acc = block_reduce(acc, combine, shared);
    if (threadIdx.x == 0) {
      if constexpr (kFloat) {
        const double value = Op == HIPDNN_EP_REDUCE_OP_MEAN ? acc / static_cast<double>(reduced_count) : acc;
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
    case HIPDNN_EP_REDUCE_OP_SUM:
      reduce_kernel<T, HIPDNN_EP_REDUCE_OP_SUM><<<grid, threads, 0, stream>>>(x, y, kept, reduced, out_count,
                                                                              reduced_count);
      break;
    case HIPDNN_EP_REDUCE_OP_MEAN:
      reduce_kernel<T, HIPDNN_EP_REDUCE_OP_MEAN><<<grid, threads, 0, stream>>>(x, y, kept, reduced, out_count,
                                                                               reduced_count);
      break;
    default:
      reduce_kernel<T, HIPDNN_EP_REDUCE_OP_MAX><<<grid, threads, 0, stream>>>(x, y, kept, reduced, out_count,
                                                                              reduced_count);
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
  dispatch_numeric_gpu(in.dtype, "reduce", [&](auto tag) {
    reduce_typed<typename decltype(tag)::type>(state, op, in, is_reduced, args.outputs[0]);
  });
}

}  // namespace hipdnn_ep::kernels::gpu
