// GPU kernels of the general ONNX ops: ArgMax/ArgMin (arg_reduce), TopK, ScatterND, ScatterElements,
// GatherND and Pad, matching
// the CPU backend (cpu/general.cpp) element for element.
//
// The scatter and gather indices are the model's data: an index out of range is never used; it is recorded
// as a data error (gpu_common.h), reported at the run's wait with the CPU backend's message.
// With a reduction, updates that hit one element are applied in index order (one thread per
// slice element walks the index tuples), so the result is the CPU backend's.
#include <algorithm>
#include <type_traits>

#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

template <typename C>
__device__ __forceinline__ bool arg_better(C v, C best, bool is_min, bool last) {
  if constexpr (std::is_floating_point_v<C>) {
    if (isnan(best)) return last && isnan(v);
    if (isnan(v)) return true;
  }
  if (v == best) return last;
  return is_min ? v < best : v > best;
}

// One thread per (outer, inner) line along the axis.
template <typename T>
__global__ void arg_reduce_kernel(const T* x, int64_t* y, int64_t lines, int64_t len, int64_t inner, bool is_min,
                                  bool last) {
  using C = typename Compute<T>::type;
  HIPDNN_EP_GRID_STRIDE(line, lines) {
    const int64_t base = (line / inner) * len * inner + line % inner;
    C best = load(x, base);
    int64_t at = 0;
    for (int64_t a = 1; a < len; ++a) {
      const C v = load(x, base + a * inner);
      if (arg_better(v, best, is_min, last)) {
        best = v;
        at = a;
      }
    }
    y[line] = at;
  }
}

// TopK's order (the CPU backend's top_k_before): a before b when a's value is better (larger with
// `largest`, NaN larger than any number), or equal and a's index smaller; index -1 is no candidate.
template <typename C>
struct TopKCand {
  C v;
  int64_t i;
};

template <typename C>
__device__ __forceinline__ bool top_k_before(const TopKCand<C>& a, const TopKCand<C>& b, bool largest) {
  if (a.i < 0) return false;
  if (b.i < 0) return true;
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = isnan(a.v);
    const bool nb = isnan(b.v);
    if (na || nb) {
      if (na && nb) return a.i < b.i;
      return largest ? na : nb;
    }
  }
  if (a.v == b.v) return a.i < b.i;
  return largest ? a.v > b.v : a.v < b.v;
}

// One block per line along the axis; step j finds, with a block reduction, the best element that
// comes after step j - 1's in TopK's order: k passes over the line, no scratch memory.
template <typename T>
__global__ void top_k_kernel(const T* x, T* values, int64_t* indices, int64_t lines, int64_t len, int64_t inner,
                             int64_t k, bool largest) {
  using C = typename Compute<T>::type;
  __shared__ TopKCand<C> shared[kBlock];
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const int64_t base = (line / inner) * len * inner + line % inner;
    const int64_t out_base = (line / inner) * k * inner + line % inner;
    TopKCand<C> prev{C{}, -1};
    for (int64_t j = 0; j < k; ++j) {
      TopKCand<C> best{C{}, -1};
      for (int64_t a = threadIdx.x; a < len; a += blockDim.x) {
        const TopKCand<C> c{load(x, base + a * inner), a};
        if ((prev.i < 0 || top_k_before(prev, c, largest)) && top_k_before(c, best, largest)) best = c;
      }
      shared[threadIdx.x] = best;
      __syncthreads();
      for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && top_k_before(shared[threadIdx.x + s], shared[threadIdx.x], largest)) {
          shared[threadIdx.x] = shared[threadIdx.x + s];
        }
        __syncthreads();
      }
      prev = shared[0];
      __syncthreads();
      if (threadIdx.x == 0) {
        values[out_base + j * inner] = x[base + prev.i * inner];
        indices[out_base + j * inner] = prev.i;
      }
    }
  }
}

// The leading k data dims a ScatterND index tuple addresses.
struct TupleSpace {
  int k = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

// Data offset of index tuple i, or -1 (recorded) when an index is out of range.
__device__ __forceinline__ int64_t tuple_offset(const int64_t* idx, int64_t i, const TupleSpace& s,
                                                DataErrorRecord* errors) {
  int64_t off = 0;
  for (int d = 0; d < s.k; ++d) {
    int64_t c = idx[i * s.k + d];
    if (c < -s.dims[d] || c >= s.dims[d]) {
      report_error(errors, kErrorScatterNdIndex, c, i, d, s.dims[d]);
      return -1;
    }
    if (c < 0) c += s.dims[d];
    off += c * s.strides[d];
  }
  return off;
}

// reduction none: one thread per update element.
template <typename T>
__global__ void scatter_nd_kernel(T* y, const int64_t* idx, const T* u, TupleSpace s, int64_t n, int64_t slice,
                                  DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(e, n * slice) {
    const int64_t off = tuple_offset(idx, e / slice, s, errors);
    if (off >= 0) y[off + e % slice] = u[e];
  }
}

template <typename C>
__device__ __forceinline__ C scatter_combine(int64_t reduction, C a, C b) {
  switch (reduction) {
    case 1:
      if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<WrapUnsigned<C>>(a) + static_cast<WrapUnsigned<C>>(b));
      else return a + b;
    case 2:
      if constexpr (std::is_integral_v<C>) {
        return static_cast<C>(static_cast<WrapUnsigned<C>>(a) * static_cast<WrapUnsigned<C>>(b));
      } else {
        return a * b;
      }
    case 3: return b > a ? b : a;
    default: return b < a ? b : a;
  }
}

// With a reduction: one thread per slice element, the index tuples in order.
template <typename T>
__global__ void scatter_nd_reduce_kernel(T* y, const int64_t* idx, const T* u, TupleSpace s, int64_t n, int64_t slice,
                                         int64_t reduction, DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(e, slice) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t off = tuple_offset(idx, i, s, errors);
      if (off < 0) continue;
      store(y, off + e, scatter_combine(reduction, load(y, off + e), load(u, i * slice + e)));
    }
  }
}

// GatherND: one thread per output element; tuple i's leading dims come from the index (after
// the batch dims, whose offset is the tuple's batch); a bad index writes zero and is recorded.
template <typename T>
__global__ void gather_nd_kernel(const T* x, const int64_t* idx, T* y, TupleSpace s, int64_t count, int64_t slice,
                                 int64_t per_batch, int64_t batch_stride, int64_t first_axis, DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(e, count) {
    const int64_t i = e / slice;
    int64_t off = (i / per_batch) * batch_stride;
    bool bad = false;
    for (int d = 0; d < s.k; ++d) {
      int64_t c = idx[i * s.k + d];
      if (c < -s.dims[d] || c >= s.dims[d]) {
        report_error(errors, kErrorGatherNdIndex, c, i, first_axis + d, s.dims[d]);
        bad = true;
        break;
      }
      if (c < 0) c += s.dims[d];
      off += c * s.strides[d];
    }
    y[e] = bad ? T{} : x[off + e % slice];
  }
}

// ScatterElements: the target offset of index position j (l: the indices' layout over [index, data
// offset without the axis]), or -1 (recorded) for an index out of range.
template <typename Index>
__device__ __forceinline__ int64_t element_target(const Index* idx, int64_t j, const Layout<2>& l, int64_t axis,
                                                  int64_t axis_len, int64_t axis_stride, DataErrorRecord* errors) {
  int64_t off[2];
  offsets_at(l, j, off);
  int64_t c = static_cast<int64_t>(idx[off[0]]);
  if (c < -axis_len || c >= axis_len) {
    report_error(errors, kErrorScatterElementsIndex, c, off[0], axis, axis_len);
    return -1;
  }
  if (c < 0) c += axis_len;
  return off[1] + c * axis_stride;
}

template <typename T, typename Index>
__global__ void scatter_elements_kernel(T* y, const Index* idx, const T* u, Layout<2> l, int64_t n, int64_t axis,
                                        int64_t axis_len, int64_t axis_stride, DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(j, n) {
    int64_t off[2];
    offsets_at(l, j, off);
    const int64_t at = element_target(idx, j, l, axis, axis_len, axis_stride, errors);
    if (at >= 0) y[at] = u[off[0]];
  }
}

// With a reduction: one thread per line along the axis (only positions of one line can hit the same
// element), in index order, as the CPU backend's row-major walk.
template <typename T, typename Index>
__global__ void scatter_elements_reduce_kernel(T* y, const Index* idx, const T* u, Layout<2> lines_layout,
                                               int64_t lines, int64_t line_len, int64_t index_axis_stride,
                                               int64_t axis, int64_t axis_len, int64_t axis_stride, int64_t reduction,
                                               DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(line, lines) {
    int64_t base[2];
    offsets_at(lines_layout, line, base);
    for (int64_t a = 0; a < line_len; ++a) {
      const int64_t at_index = base[0] + a * index_axis_stride;
      int64_t c = static_cast<int64_t>(idx[at_index]);
      if (c < -axis_len || c >= axis_len) {
        report_error(errors, kErrorScatterElementsIndex, c, at_index, axis, axis_len);
        continue;
      }
      if (c < 0) c += axis_len;
      const int64_t at = base[1] + c * axis_stride;
      store(y, at, scatter_combine(reduction, load(y, at), load(u, at_index)));
    }
  }
}

struct PadShape {
  int rank = 0;
  int64_t in_dims[kMaxRank] = {};
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t begin[kMaxRank] = {};
};

// As cpu/general.cpp's pad_source: -1 for a constant pad position.
__device__ __forceinline__ int64_t pad_source(int64_t i, int64_t begin, int64_t n, int64_t mode) {
  int64_t s = i - begin;
  if (s >= 0 && s < n) return s;
  if (mode == 1) {
    if (n == 1) return 0;
    const int64_t period = 2 * (n - 1);
    s %= period;
    if (s < 0) s += period;
    return s < n ? s : period - s;
  }
  if (mode == 2) return s < 0 ? 0 : n - 1;
  if (mode == 3) {
    s %= n;
    return s < 0 ? s + n : s;
  }
  return -1;
}

template <typename T>
__global__ void pad_kernel(const T* x, const T* value, T* y, PadShape p, int64_t count, int64_t mode) {
  HIPDNN_EP_GRID_STRIDE(j, count) {
    int64_t rest = j;
    int64_t off = 0;
    bool constant = false;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      const int64_t s = pad_source(c, p.begin[d], p.in_dims[d], mode);
      if (s < 0) constant = true;
      else off += s * p.in_strides[d];
    }
    y[j] = constant ? *value : x[off];
  }
}

void copy_device(hipdnn_ep_state_t* state, void* dst, const void* src, size_t bytes, const char* what) {
  if (bytes == 0 || dst == src) return;
  if (hipError_t e = hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, current_stream(state));
      e != hipSuccess) {
    fail(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text(what, e));
  }
}

}  // namespace

void arg_reduce(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_ARG_REDUCE_INT_ATTR_AXIS]);
  const bool last = args.int_attrs[HIPDNN_EP_KERNEL_ARG_REDUCE_INT_ATTR_SELECT_LAST_INDEX] != 0;
  const bool is_min = args.int_attrs[HIPDNN_EP_KERNEL_ARG_REDUCE_INT_ATTR_IS_MIN] != 0;
  const int64_t len = dims[axis];
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  const int64_t lines = dims_product(dims, 0, axis) * inner;
  if (lines == 0) return;  // validation refused an empty axis with lines to fill
  const hipStream_t stream = current_stream(state);
  dispatch_numeric_gpu(in.dtype, "arg_reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    arg_reduce_kernel<<<grid_for(lines), kBlock, 0, stream>>>(
        static_cast<const T*>(in.data), static_cast<int64_t*>(args.outputs[0].data), lines, len, inner, is_min, last);
  });
  check_launch("arg_reduce");
}

void top_k(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_TOP_K_INT_ATTR_AXIS]);
  const bool largest = args.int_attrs[HIPDNN_EP_KERNEL_TOP_K_INT_ATTR_LARGEST] != 0;
  const int64_t k = args.outputs[0].dims[axis];  // validated: k <= dims[axis]
  const int64_t len = dims[axis];
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  const int64_t lines = dims_product(dims, 0, axis) * inner;
  if (lines == 0 || k == 0) return;
  const hipStream_t stream = current_stream(state);
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(lines, 65535 * 8));
  dispatch_numeric_gpu(in.dtype, "top_k", [&](auto tag) {
    using T = typename decltype(tag)::type;
    top_k_kernel<<<blocks, kBlock, 0, stream>>>(static_cast<const T*>(in.data), static_cast<T*>(args.outputs[0].data),
                                                static_cast<int64_t*>(args.outputs[1].data), lines, len, inner, k,
                                                largest);
  });
  check_launch("top_k");
}

void scatter_nd(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& data = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& indices = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& updates = args.inputs[2];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t reduction = args.int_attrs[HIPDNN_EP_KERNEL_SCATTER_ND_INT_ATTR_REDUCTION];
  const Dims dims = dims_of(data);
  const Dims idims = dims_of(indices);
  const auto k = static_cast<size_t>(idims.back());
  if (k > static_cast<size_t>(kMaxRank)) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "scatter_nd: index tuples of " + std::to_string(k) + " entries; the GPU kernel "
                                       "takes at most " + std::to_string(kMaxRank));
  }
  const int64_t n = dims_product(idims, 0, idims.size() - 1);
  const int64_t slice = dims_product(dims, k, dims.size());
  copy_device(state, out.data, data.data, static_cast<size_t>(element_count(data)) * dtype_size(data.dtype),
              "scatter_nd: copying data");
  if (n == 0 || slice == 0) return;
  TupleSpace s;
  s.k = static_cast<int>(k);
  const Dims strides = contiguous_strides(dims);
  for (size_t d = 0; d < k; ++d) {
    s.dims[d] = dims[d];
    s.strides[d] = strides[d];
  }
  DataErrorRecord* errors = gpu_device(state).data_errors();
  const hipStream_t stream = current_stream(state);
  const auto* idx = static_cast<const int64_t*>(indices.data);
  if (reduction == 0) {
    dispatch_by_size(dtype_size(data.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      scatter_nd_kernel<<<grid_for(n * slice), kBlock, 0, stream>>>(
          static_cast<T*>(out.data), idx, static_cast<const T*>(updates.data), s, n, slice, errors);
    });
  } else {
    dispatch_numeric_gpu(data.dtype, "scatter_nd", [&](auto tag) {
      using T = typename decltype(tag)::type;
      scatter_nd_reduce_kernel<<<grid_for(slice), kBlock, 0, stream>>>(
          static_cast<T*>(out.data), idx, static_cast<const T*>(updates.data), s, n, slice, reduction, errors);
    });
  }
  check_launch("scatter_nd");
}

void gather_nd(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& data = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& indices = args.inputs[1];
  const auto b = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_GATHER_ND_INT_ATTR_BATCH_DIMS]);
  const Dims dims = dims_of(data);
  const Dims idims = dims_of(indices);
  const auto k = static_cast<size_t>(idims.back());
  if (k > static_cast<size_t>(kMaxRank)) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "gather_nd: index tuples of " + std::to_string(k) + " entries; the GPU kernel "
                                       "takes at most " + std::to_string(kMaxRank));
  }
  const int64_t n = dims_product(idims, 0, idims.size() - 1);
  const int64_t slice = dims_product(dims, b + k, dims.size());
  const int64_t count = n * slice;
  if (count == 0) return;
  const int64_t per_batch = n / std::max<int64_t>(dims_product(idims, 0, b), 1);
  TupleSpace s;
  s.k = static_cast<int>(k);
  const Dims strides = contiguous_strides(dims);
  for (size_t d = 0; d < k; ++d) {
    s.dims[d] = dims[b + d];
    s.strides[d] = strides[b + d];
  }
  DataErrorRecord* errors = gpu_device(state).data_errors();
  const hipStream_t stream = current_stream(state);
  dispatch_by_size(dtype_size(data.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gather_nd_kernel<<<grid_for(count), kBlock, 0, stream>>>(
        static_cast<const T*>(data.data), static_cast<const int64_t*>(indices.data), static_cast<T*>(args.outputs[0].data),
        s, count, slice, per_batch, dims_product(dims, b, dims.size()), static_cast<int64_t>(b), errors);
  });
  check_launch("gather_nd");
}

namespace {

template <typename Index>
void scatter_elements_typed(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& data = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& indices = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_SCATTER_ELEMENTS_INT_ATTR_AXIS]);
  const int64_t reduction = args.int_attrs[HIPDNN_EP_KERNEL_SCATTER_ELEMENTS_INT_ATTR_REDUCTION];
  const Dims dims = dims_of(data);
  const Dims shape = dims_of(indices);
  copy_device(state, out.data, data.data, static_cast<size_t>(element_count(data)) * dtype_size(data.dtype),
              "scatter_elements: copying data");
  const int64_t n = element_count(shape);
  if (n == 0) return;
  const Dims data_strides = contiguous_strides(dims);
  const Dims index_strides = contiguous_strides(shape);
  Dims skip_axis = data_strides;
  skip_axis[axis] = 0;  // the axis coordinate comes from the index
  DataErrorRecord* errors = gpu_device(state).data_errors();
  const hipStream_t stream = current_stream(state);
  const int64_t axis_len = dims[axis];
  const auto axis_attr = static_cast<int64_t>(axis);
  const auto* idx = static_cast<const Index*>(indices.data);
  if (reduction == 0) {
    const Layout<2> l = make_layout<2>(shape, {index_strides, skip_axis});
    dispatch_by_size(dtype_size(data.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      scatter_elements_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          static_cast<T*>(out.data), idx, static_cast<const T*>(args.inputs[2].data), l, n, axis_attr, axis_len,
          data_strides[axis], errors);
    });
  } else {
    Dims line_shape = shape;
    line_shape[axis] = 1;  // one thread per line along the axis
    const Layout<2> lines_layout = make_layout<2>(line_shape, {index_strides, skip_axis});
    const int64_t lines = element_count(line_shape);
    dispatch_numeric_gpu(data.dtype, "scatter_elements", [&](auto tag) {
      using T = typename decltype(tag)::type;
      scatter_elements_reduce_kernel<<<grid_for(lines), kBlock, 0, stream>>>(
          static_cast<T*>(out.data), idx, static_cast<const T*>(args.inputs[2].data), lines_layout, lines,
          shape[axis], index_strides[axis], axis_attr, axis_len, data_strides[axis], reduction, errors);
    });
  }
  check_launch("scatter_elements");
}

}  // namespace

void scatter_elements(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  if (args.inputs[1].dtype == HIPDNN_EP_DTYPE_INT32) {
    scatter_elements_typed<int32_t>(state, args);
  } else {
    scatter_elements_typed<int64_t>(state, args);
  }
}

void pad(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t mode = args.int_attrs[HIPDNN_EP_KERNEL_PAD_INT_ATTR_MODE];
  const Dims dims = dims_of(in);
  const Dims out_dims = dims_of(out);
  const int64_t count = element_count(out);
  if (count == 0) return;
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    fail(HIPDNN_EP_STATUS_UNSUPPORTED, "pad: rank " + std::to_string(dims.size()) + "; the GPU kernel takes at most " +
                                       std::to_string(kMaxRank));
  }
  const auto* pads = static_cast<const int64_t*>(args.inputs[2].data);  // host memory
  PadShape p;
  p.rank = static_cast<int>(dims.size());
  const Dims strides = contiguous_strides(dims);
  for (size_t d = 0; d < dims.size(); ++d) {
    p.in_dims[d] = dims[d];
    p.out_dims[d] = out_dims[d];
    p.in_strides[d] = strides[d];
    p.begin[d] = pads[d];
  }
  const hipStream_t stream = current_stream(state);
  dispatch_by_size(dtype_size(in.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    pad_kernel<<<grid_for(count), kBlock, 0, stream>>>(static_cast<const T*>(in.data),
                                                       static_cast<const T*>(args.inputs[1].data),
                                                       static_cast<T*>(out.data), p, count, mode);
  });
  check_launch("pad");
}

}  // namespace hipdnn_ep::kernels::gpu
