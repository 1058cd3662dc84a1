// CPU kernels of the general ONNX ops: ArgMax/ArgMin (arg_reduce), TopK, ScatterND, ScatterElements,
// GatherND and Pad.
//
// The scatter and gather kernels read their indices from the model's data: every index is checked
// before anything is written, and one out of range is INVALID_ARGUMENT naming it (the output is
// left as it was).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// Whether v replaces the best so far: strictly better, or equal when the last index wins; a NaN
// is the extreme (the first NaN, or the last with select_last_index).
template <typename C>
bool arg_better(C v, C best, bool is_min, bool last) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(best)) return last && std::isnan(v);
    if (std::isnan(v)) return true;
  }
  if (v == best) return last;
  return is_min ? v < best : v > best;
}

}  // namespace

void arg_reduce(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_ARG_REDUCE_INT_ATTR_AXIS]);
  const bool last = args.int_attrs[HIPDNN_EP_KERNEL_ARG_REDUCE_INT_ATTR_SELECT_LAST_INDEX] != 0;
  const bool is_min = args.int_attrs[HIPDNN_EP_KERNEL_ARG_REDUCE_INT_ATTR_IS_MIN] != 0;
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t len = dims[axis];
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  auto* y = static_cast<int64_t*>(args.outputs[0].data);
  dispatch_numeric(in.dtype, "arg_reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename ComputeType<T>::type;
    const T* x = static_cast<const T*>(in.data);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t r = 0; r < inner; ++r) {
        const int64_t base = o * len * inner + r;
        C best = load(x, base);
        int64_t at = 0;
        for (int64_t a = 1; a < len; ++a) {
          const C v = load(x, base + a * inner);
          if (arg_better(v, best, is_min, last)) {
            best = v;
            at = a;
          }
        }
        y[o * inner + r] = at;
      }
    }
  });
}

namespace {

// TopK's order: a before b when a's value is better (larger with `largest`, NaN larger than any
// number), or equal and a's index smaller.  A strict weak order, so sorting is well defined.
template <typename C>
bool top_k_before(C va, int64_t ia, C vb, int64_t ib, bool largest) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = std::isnan(va);
    const bool nb = std::isnan(vb);
    if (na || nb) {
      if (na && nb) return ia < ib;
      return largest ? na : nb;
    }
  }
  if (va == vb) return ia < ib;
  return largest ? va > vb : va < vb;
}

}  // namespace

void top_k(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_TOP_K_INT_ATTR_AXIS]);
  const bool largest = args.int_attrs[HIPDNN_EP_KERNEL_TOP_K_INT_ATTR_LARGEST] != 0;
  const int64_t k = args.outputs[0].dims[axis];  // validated: k <= dims[axis]
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t len = dims[axis];
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  if (k == 0 || outer * inner == 0) return;
  auto* yi = static_cast<int64_t*>(args.outputs[1].data);
  dispatch_numeric(in.dtype, "top_k", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename ComputeType<T>::type;
    const T* x = static_cast<const T*>(in.data);
    T* yv = static_cast<T*>(args.outputs[0].data);
    std::vector<C> line(static_cast<size_t>(len));
    std::vector<int64_t> order(static_cast<size_t>(len));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t r = 0; r < inner; ++r) {
        const int64_t base = o * len * inner + r;
        for (int64_t a = 0; a < len; ++a) {
          line[static_cast<size_t>(a)] = load(x, base + a * inner);
          order[static_cast<size_t>(a)] = a;
        }
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          return top_k_before(line[static_cast<size_t>(a)], a, line[static_cast<size_t>(b)], b, largest);
        });
        const int64_t out_base = o * k * inner + r;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t a = order[static_cast<size_t>(j)];
          yv[out_base + j * inner] = x[base + a * inner];
          yi[out_base + j * inner] = a;
        }
      }
    }
  });
}

namespace {

template <typename C>
C scatter_combine(int64_t reduction, C a, C b) {
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
    case 4: return b < a ? b : a;
    default: return b;
  }
}

}  // namespace

void scatter_nd(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& data = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& indices = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& updates = args.inputs[2];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t reduction = args.int_attrs[HIPDNN_EP_KERNEL_SCATTER_ND_INT_ATTR_REDUCTION];
  const Dims dims = dims_of(data);
  const Dims idims = dims_of(indices);
  const auto k = static_cast<size_t>(idims.back());
  const int64_t n = dims_product(idims, 0, idims.size() - 1);
  const int64_t slice = dims_product(dims, k, dims.size());
  const Dims strides = contiguous_strides(dims);
  const auto* idx = static_cast<const int64_t*>(indices.data);
  // Each tuple's data offset; all checked before the output is touched.
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t c = idx[i * static_cast<int64_t>(k) + static_cast<int64_t>(d)];
      if (c < -dims[d] || c >= dims[d]) {
        fail_invalid("index " + std::to_string(c) + " of index tuple " + std::to_string(i) + " is out of range for axis " +
                     std::to_string(d) + " of size " + std::to_string(dims[d]));
      }
      if (c < 0) c += dims[d];
      off += c * strides[d];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  const size_t bytes = static_cast<size_t>(element_count(data)) * dtype_size(data.dtype);
  if (bytes != 0 && out.data != data.data) std::memcpy(out.data, data.data, bytes);
  if (reduction == 0) {
    const size_t slice_bytes = static_cast<size_t>(slice) * dtype_size(data.dtype);
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(static_cast<char*>(out.data) + offsets[i] * static_cast<int64_t>(dtype_size(data.dtype)),
                  static_cast<const char*>(updates.data) + i * static_cast<int64_t>(slice_bytes), slice_bytes);
    }
    return;
  }
  dispatch_numeric(data.dtype, "scatter_nd", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename ComputeType<T>::type;
    T* y = static_cast<T*>(out.data);
    const T* u = static_cast<const T*>(updates.data);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t e = 0; e < slice; ++e) {
        const int64_t at = offsets[i] + e;
        store(y, at, scatter_combine<C>(reduction, load(y, at), load(u, i * slice + e)));
      }
    }
  });
}

void gather_nd(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& data = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& indices = args.inputs[1];
  const auto b = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_GATHER_ND_INT_ATTR_BATCH_DIMS]);
  const Dims dims = dims_of(data);
  const Dims idims = dims_of(indices);
  const auto k = static_cast<size_t>(idims.back());
  const int64_t n = dims_product(idims, 0, idims.size() - 1);  // index tuples
  const int64_t per_batch = n == 0 ? 0 : n / std::max<int64_t>(dims_product(idims, 0, b), 1);
  const int64_t slice = dims_product(dims, b + k, dims.size());
  const int64_t batch_stride = dims_product(dims, b, dims.size());
  const Dims strides = contiguous_strides(dims);
  const auto* idx = static_cast<const int64_t*>(indices.data);
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = (i / per_batch) * batch_stride;
    for (size_t d = 0; d < k; ++d) {
      const int64_t size = dims[b + d];
      int64_t c = idx[i * static_cast<int64_t>(k) + static_cast<int64_t>(d)];
      if (c < -size || c >= size) {
        fail_invalid("index " + std::to_string(c) + " of index tuple " + std::to_string(i) + " is out of range for axis " +
                     std::to_string(b + d) + " of size " + std::to_string(size));
      }
      if (c < 0) c += size;
      off += c * strides[b + d];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  const size_t size = dtype_size(data.dtype);
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(static_cast<char*>(args.outputs[0].data) + i * slice * static_cast<int64_t>(size),
                static_cast<const char*>(data.data) + offsets[i] * static_cast<int64_t>(size),
                static_cast<size_t>(slice) * size);
  }
}

namespace {

template <typename Index>
void scatter_elements_typed(const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& data = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& indices = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_SCATTER_ELEMENTS_INT_ATTR_AXIS]);
  const int64_t reduction = args.int_attrs[HIPDNN_EP_KERNEL_SCATTER_ELEMENTS_INT_ATTR_REDUCTION];
  const Dims dims = dims_of(data);
  const Dims shape = dims_of(indices);
  const int64_t n = element_count(indices);
  const auto* idx = static_cast<const Index*>(indices.data);
  const int64_t axis_len = dims[axis];
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = idx[j];
    if (i < -axis_len || i >= axis_len) {
      fail_invalid("index " + std::to_string(i) + " at position " + std::to_string(j) + " is out of range for axis " +
                   std::to_string(axis) + " of size " + std::to_string(axis_len));
    }
  }
  const size_t bytes = static_cast<size_t>(element_count(data)) * dtype_size(data.dtype);
  if (bytes != 0 && out.data != data.data) std::memcpy(out.data, data.data, bytes);
  const Dims strides = contiguous_strides(dims);
  std::vector<int64_t> pos(shape.size(), 0);  // the indices' coordinate, in row-major order
  auto target = [&](int64_t j) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t c = pos[d];
      if (d == axis) c = idx[j] < 0 ? idx[j] + axis_len : idx[j];
      off += c * strides[d];
    }
    for (size_t d = shape.size(); d-- > 0;) {
      if (++pos[d] < shape[d]) break;
      pos[d] = 0;
    }
    return off;
  };
  if (reduction == 0) {
    dispatch_by_size(dtype_size(data.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* u = static_cast<const T*>(args.inputs[2].data);
      T* y = static_cast<T*>(out.data);
      for (int64_t j = 0; j < n; ++j) y[target(j)] = u[j];
    });
    return;
  }
  dispatch_numeric(data.dtype, "scatter_elements", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename ComputeType<T>::type;
    const T* u = static_cast<const T*>(args.inputs[2].data);
    T* y = static_cast<T*>(out.data);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = target(j);
      store(y, at, scatter_combine<C>(reduction, load(y, at), load(u, j)));
    }
  });
}

}  // namespace

void scatter_elements(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  if (args.inputs[1].dtype == HIPDNN_EP_DTYPE_INT32) {
    scatter_elements_typed<int32_t>(args);
  } else {
    scatter_elements_typed<int64_t>(args);
  }
}

namespace {

// The source coordinate of output coordinate i along an axis of size n that was padded by `begin`
// (mode 1 reflect, 2 edge, 3 wrap); -1 for a constant pad position.
int64_t pad_source(int64_t i, int64_t begin, int64_t n, int64_t mode) {
  int64_t s = i - begin;
  if (s >= 0 && s < n) return s;
  switch (mode) {
    case 1: {  // reflect, without repeating the edge: period 2 (n - 1)
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      s %= period;
      if (s < 0) s += period;
      return s < n ? s : period - s;
    }
    case 2: return s < 0 ? 0 : n - 1;
    case 3: {
      s %= n;
      return s < 0 ? s + n : s;
    }
    default: return -1;
  }
}

}  // namespace

void pad(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const int64_t mode = args.int_attrs[HIPDNN_EP_KERNEL_PAD_INT_ATTR_MODE];
  const Dims dims = dims_of(in);
  const Dims out_dims = dims_of(out);
  const auto* pads = static_cast<const int64_t*>(args.inputs[2].data);  // host memory
  const int64_t count = element_count(out);
  const Dims in_strides = contiguous_strides(dims);
  const size_t rank = dims.size();
  dispatch_by_size(dtype_size(in.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in.data);
    const T value = *static_cast<const T*>(args.inputs[1].data);
    T* y = static_cast<T*>(out.data);
    std::vector<int64_t> pos(rank, 0);
    for (int64_t j = 0; j < count; ++j) {
      int64_t off = 0;
      bool constant = false;
      for (size_t d = 0; d < rank && !constant; ++d) {
        const int64_t s = pad_source(pos[d], pads[d], dims[d], mode);
        if (s < 0) constant = true;
        else off += s * in_strides[d];
      }
      y[j] = constant ? value : x[off];
      for (size_t d = rank; d-- > 0;) {
        if (++pos[d] < out_dims[d]) break;
        pos[d] = 0;
      }
    }
  });
}

}  // namespace hipdnn_ep::kernels::cpu
