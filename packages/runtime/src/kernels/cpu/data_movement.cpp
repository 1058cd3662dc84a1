// CPU data movement kernels: transpose, concat, slice, gather, expand. They
// only move bytes, so they handle every dtype by element width.
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/tensor_util.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// out (contiguous, dims `shape`) [idx] = in[offset + sum(idx[d] * in_strides[d])]
void strided_copy(const hipdnn_ep_tensor_ref_t& in, int64_t offset, const Dims& in_strides,
                  const hipdnn_ep_tensor_ref_t& out) {
  const Dims shape = dims_of(out);
  const std::array<Dims, 2> strides{contiguous_strides(shape), in_strides};
  dispatch_by_size(dtype_size(out.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(in.data) + offset;
    T* dst = static_cast<T*>(out.data);
    for_each_row<2>(shape, strides, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
      if (st[0] == 1 && st[1] == 1) {
        std::memcpy(dst + off[0], src + off[1], static_cast<size_t>(n) * sizeof(T));
        return;
      }
      for (int64_t i = 0; i < n; ++i) dst[off[0] + i * st[0]] = src[off[1] + i * st[1]];
    });
  });
}

const int64_t* int64_data(const hipdnn_ep_tensor_ref_t& t) { return static_cast<const int64_t*>(t.data); }

template <typename Index>
void gather_typed(const hipdnn_ep_tensor_ref_t& data, const hipdnn_ep_tensor_ref_t& indices, size_t axis,
                  const hipdnn_ep_tensor_ref_t& out) {
  const Dims dims = dims_of(data);
  const int64_t outer = dims_product(dims, 0, axis);
  const int64_t axis_len = dims[axis];
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  const int64_t n_indices = element_count(indices);
  const Index* idx = static_cast<const Index*>(indices.data);
  // Normalize and check every index before writing anything.
  std::vector<int64_t> rows(static_cast<size_t>(n_indices));
  for (int64_t j = 0; j < n_indices; ++j) {
    const int64_t i = idx[j];
    if (i < -axis_len || i >= axis_len) {
      fail_invalid("index " + std::to_string(i) + " at position " + std::to_string(j) + " is out of range for axis " +
                   std::to_string(axis) + " of size " + std::to_string(axis_len));
    }
    rows[j] = i < 0 ? i + axis_len : i;
  }
  const size_t row_bytes = static_cast<size_t>(inner) * dtype_size(data.dtype);
  if (row_bytes == 0) return;
  const auto* src = static_cast<const unsigned char*>(data.data);
  auto* dst = static_cast<unsigned char*>(out.data);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n_indices; ++j) {
      std::memcpy(dst + (o * n_indices + j) * row_bytes, src + (o * axis_len + rows[j]) * row_bytes, row_bytes);
    }
  }
}

// out[i] = data[i with its axis coordinate replaced by indices[i]]; every index is checked first.
template <typename Index>
void gather_elements_typed(const hipdnn_ep_tensor_ref_t& data, const hipdnn_ep_tensor_ref_t& indices, size_t axis,
                           const hipdnn_ep_tensor_ref_t& out) {
  const Dims dims = dims_of(data);
  const Dims shape = dims_of(indices);
  const int64_t n = element_count(indices);
  const Index* idx = static_cast<const Index*>(indices.data);
  const int64_t axis_len = dims[axis];
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = idx[j];
    if (i < -axis_len || i >= axis_len) {
      fail_invalid("index " + std::to_string(i) + " at position " + std::to_string(j) + " is out of range for axis " +
                   std::to_string(axis) + " of size " + std::to_string(axis_len));
    }
  }
  const Dims strides = contiguous_strides(dims);
  std::vector<int64_t> pos(shape.size(), 0);  // the output coordinate, in row-major order
  dispatch_by_size(dtype_size(data.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(data.data);
    T* dst = static_cast<T*>(out.data);
    for (int64_t j = 0; j < n; ++j) {
      int64_t off = 0;
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t c = pos[d];
        if (d == axis) c = idx[j] < 0 ? idx[j] + axis_len : idx[j];
        off += c * strides[d];
      }
      dst[j] = src[off];
      for (size_t d = shape.size(); d-- > 0;) {
        if (++pos[d] < shape[d]) break;
        pos[d] = 0;
      }
    }
  });
}

}  // namespace

void gather_elements(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_GATHER_ELEMENTS_INT_ATTR_AXIS]);
  if (args.inputs[1].dtype == HIPDNN_EP_DTYPE_INT32) {
    gather_elements_typed<int32_t>(args.inputs[0], args.inputs[1], axis, args.outputs[0]);
  } else {
    gather_elements_typed<int64_t>(args.inputs[0], args.inputs[1], axis, args.outputs[0]);
  }
}

void trilu(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const int64_t rows = dims[dims.size() - 2];
  const int64_t cols = dims[dims.size() - 1];
  const int64_t k = static_cast<const int64_t*>(args.inputs[1].data)[0];
  const bool upper = args.int_attrs[HIPDNN_EP_KERNEL_TRILU_INT_ATTR_UPPER] != 0;
  const int64_t n = element_count(in);
  dispatch_by_size(dtype_size(in.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in.data);
    T* y = static_cast<T*>(args.outputs[0].data);
    for (int64_t e = 0; e < n; ++e) {
      const int64_t j = e % cols;
      const int64_t i = (e / cols) % rows;
      const bool keep = upper ? j - i >= k : j - i <= k;  // k is a host value: no overflow for real dims
      y[e] = keep ? x[e] : T{0};
    }
  });
}

void transpose(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims in_strides = contiguous_strides(dims_of(in));
  const int64_t* perm = int64_data(args.inputs[1]);
  Dims strides(in_strides.size());
  for (size_t d = 0; d < strides.size(); ++d) strides[d] = in_strides[perm[d]];
  strided_copy(in, 0, strides, args.outputs[0]);
}

void concat(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const Dims out_dims = dims_of(out);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_CONCAT_INT_ATTR_AXIS]);
  const int64_t outer = dims_product(out_dims, 0, axis);
  const size_t inner_bytes = static_cast<size_t>(dims_product(out_dims, axis + 1, out_dims.size())) * dtype_size(out.dtype);
  auto* dst = static_cast<unsigned char*>(out.data);
  for (int64_t o = 0; o < outer; ++o) {
    for (int32_t i = 0; i < args.n_inputs; ++i) {
      const hipdnn_ep_tensor_ref_t& in = args.inputs[i];
      const size_t chunk = static_cast<size_t>(in.dims[axis]) * inner_bytes;
      if (chunk == 0) continue;
      std::memcpy(dst, static_cast<const unsigned char*>(in.data) + o * chunk, chunk);
      dst += chunk;
    }
  }
}

void slice(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims in_strides = contiguous_strides(dims_of(in));
  const int64_t* starts = int64_data(args.inputs[1]);
  const int64_t* steps = int64_data(args.inputs[2]);
  if (element_count(args.outputs[0]) == 0) return;
  int64_t offset = 0;
  Dims strides(in_strides.size());
  for (size_t d = 0; d < strides.size(); ++d) {
    offset += starts[d] * in_strides[d];
    // A step is applied only between two output elements: with one (a step of INT64_MAX slicing one
    // element) the product could overflow, and validate_slice bounds it for two or more.
    strides[d] = args.outputs[0].dims[d] > 1 ? steps[d] * in_strides[d] : 0;
  }
  strided_copy(in, offset, strides, args.outputs[0]);
}

void gather(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_GATHER_INT_ATTR_AXIS]);
  if (args.inputs[1].dtype == HIPDNN_EP_DTYPE_INT32) {
    gather_typed<int32_t>(args.inputs[0], args.inputs[1], axis, args.outputs[0]);
  } else {
    gather_typed<int64_t>(args.inputs[0], args.inputs[1], axis, args.outputs[0]);
  }
}

void expand(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  strided_copy(in, 0, broadcast_strides(dims_of(in), dims_of(args.outputs[0])), args.outputs[0]);
}

}  // namespace hipdnn_ep::kernels::cpu
