// GPU data movement kernels: transpose, concat, slice, gather, expand, and
// the strided copy they share. They move elements by width, so every dtype
// works. Also the small helpers of gpu_common.h that need the state.
#include <mutex>
#include <string>

#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/validate.h"
#include "state.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

template <typename T>
__global__ void strided_copy_kernel(const T* src, T* dst, Layout<2> l, int64_t n) {
  HIPDNN_EP_GRID_STRIDE(i, n) {
    int64_t off[2];
    offsets_at(l, i, off);
    dst[off[0]] = src[off[1]];
  }
}

// An index out of range writes zeros and is recorded (gpu_common.h: data checks).
template <typename T, typename Index>
__global__ void gather_kernel(const T* data, const Index* indices, T* out, int64_t n, int64_t n_indices,
                              int64_t axis, int64_t axis_len, int64_t inner, DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(i, n) {
    const int64_t r = i % inner;
    const int64_t j = (i / inner) % n_indices;
    const int64_t o = i / (inner * n_indices);
    int64_t index = static_cast<int64_t>(indices[j]);
    if (index < -axis_len || index >= axis_len) {
      if (r == 0) report_error(errors, kErrorGatherIndex, index, j, axis, axis_len);
      out[i] = T{};
      continue;
    }
    if (index < 0) index += axis_len;
    out[i] = data[(o * axis_len + index) * inner + r];
  }
}

const int64_t* int64_data(const hipdnn_ep_tensor_ref_t& t) { return static_cast<const int64_t*>(t.data); }

// GatherElements: l maps an output position to its index position (0) and its data offset with
// the axis coordinate left out (1); an index out of range writes zero and is recorded.
template <typename T, typename Index>
__global__ void gather_elements_kernel(const T* data, const Index* indices, T* out, Layout<2> l, int64_t n,
                                       int64_t axis, int64_t axis_len, int64_t axis_stride, DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(i, n) {
    int64_t off[2];
    offsets_at(l, i, off);
    int64_t index = static_cast<int64_t>(indices[off[0]]);
    if (index < -axis_len || index >= axis_len) {
      report_error(errors, kErrorGatherElementsIndex, index, off[0], axis, axis_len);
      out[i] = T{};
      continue;
    }
    if (index < 0) index += axis_len;
    out[i] = data[off[1] + index * axis_stride];
  }
}

template <typename T>
__global__ void trilu_kernel(const T* x, T* y, int64_t n, int64_t rows, int64_t cols, int64_t k, bool upper) {
  HIPDNN_EP_GRID_STRIDE(e, n) {
    const int64_t j = e % cols;
    const int64_t i = (e / cols) % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    y[e] = keep ? x[e] : T{0};
  }
}

}  // namespace

void trilu(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims dims = dims_of(in);
  const int64_t n = element_count(dims);
  if (n == 0) return;
  const int64_t k = int64_data(args.inputs[1])[0];  // host memory
  const bool upper = args.int_attrs[HIPDNN_EP_KERNEL_TRILU_INT_ATTR_UPPER] != 0;
  const hipStream_t stream = current_stream(state);
  dispatch_by_size(dtype_size(in.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    trilu_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(in.data), static_cast<T*>(args.outputs[0].data),
                                                     n, dims[dims.size() - 2], dims[dims.size() - 1], k, upper);
  });
  check_launch("trilu");
}

void strided_copy(hipdnn_ep_state_t* state, const void* in, int64_t offset, const Dims& in_strides, void* out,
                  const Dims& shape, size_t element_size) {
  const int64_t n = element_count(shape);
  if (n == 0) return;
  const Layout<2> l = make_layout<2>(shape, {contiguous_strides(shape), in_strides});
  const hipStream_t stream = current_stream(state);
  dispatch_by_size(element_size, [&](auto tag) {
    using T = typename decltype(tag)::type;
    strided_copy_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(in) + offset, static_cast<T*>(out),
                                                            l, n);
  });
  check_launch("strided copy");
}

TempBuffer::TempBuffer(hipdnn_ep_state_t* state, uint64_t bytes) : state_(state) {
  std::lock_guard<std::mutex> lock(state->memory_mutex);
  if (state->allocator->allocate(bytes, state->stream.load(), &data_) != HIPDNN_EP_STATUS_OK) {
    fail(HIPDNN_EP_STATUS_OUT_OF_MEMORY, std::string("temporary buffer: ") + hipdnn_ep_last_error());
  }
}

TempBuffer::~TempBuffer() {
  std::lock_guard<std::mutex> lock(state_->memory_mutex);
  state_->allocator->free(data_, state_->stream.load());
}

std::string data_error_message(const DataErrorRecord& record) {
  const int64_t* v = record.values;
  auto str = [](int64_t x) { return std::to_string(x); };
  switch (record.code) {
    case kErrorIntDivByZero: return "hipdnn_ep_kernel_binary: integer division by zero";
    case kErrorGatherIndex:
    case kErrorGatherElementsIndex:
      return std::string(record.code == kErrorGatherIndex ? "hipdnn_ep_kernel_gather" : "hipdnn_ep_kernel_gather_elements") +
             ": index " + str(v[0]) + " at position " + str(v[1]) + " is out of range for axis " +
             str(v[2]) + " of size " + str(v[3]);
    case kErrorScatterNdIndex:
    case kErrorGatherNdIndex:
      return std::string(record.code == kErrorScatterNdIndex ? "hipdnn_ep_kernel_scatter_nd" : "hipdnn_ep_kernel_gather_nd") +
             ": index " + str(v[0]) + " of index tuple " + str(v[1]) + " is out of range for axis " + str(v[2]) +
             " of size " + str(v[3]);
    case kErrorScatterElementsIndex:
      return "hipdnn_ep_kernel_scatter_elements: index " + str(v[0]) + " at position " + str(v[1]) +
             " is out of range for axis " + str(v[2]) + " of size " + str(v[3]);
    case kErrorRotaryPosition:
    case kErrorGqaRotaryPosition:
      return std::string(record.code == kErrorRotaryPosition ? "hipdnn_ep_kernel_rotary_embedding"
                                                              : "hipdnn_ep_kernel_group_query_attention") +
             ": position " + str(v[0]) + " is outside the rotary cache's " + str(v[1]) + " positions";
    case kErrorGqaTotalLength:
      return "hipdnn_ep_kernel_group_query_attention: total_sequence_length " + str(v[0]) +
             " must be in [sequence length " + str(v[1]) + ", present length " + str(v[2]) + "]";
    case kErrorGqaSeqlens:
      return "hipdnn_ep_kernel_group_query_attention: seqlens_k[" + str(v[0]) + "] = " + str(v[1]) +
             " does not fit the present buffer of " + str(v[2]) + " positions";
    case kErrorGqaPastLength:
      return "hipdnn_ep_kernel_group_query_attention: seqlens_k[" + str(v[0]) + "] = " + str(v[1]) + " with " +
             str(v[2]) + " new tokens needs " + str(v[1] + 1 - v[2]) + " past positions, but past_key has " + str(v[3]);
    default: break;
  }
  return "a GPU kernel recorded an unknown data error (code " + std::to_string(record.code) + ")";
}

void transpose(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims in_strides = contiguous_strides(dims_of(in));
  const int64_t* perm = int64_data(args.inputs[1]);  // host memory
  Dims strides(in_strides.size());
  for (size_t d = 0; d < strides.size(); ++d) strides[d] = in_strides[perm[d]];
  strided_copy(state, in.data, 0, strides, args.outputs[0].data, dims_of(args.outputs[0]), dtype_size(in.dtype));
}

void concat(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const Dims out_dims = dims_of(out);
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_CONCAT_INT_ATTR_AXIS]);
  const int64_t outer = dims_product(out_dims, 0, axis);
  const size_t inner_bytes =
      static_cast<size_t>(dims_product(out_dims, axis + 1, out_dims.size())) * dtype_size(out.dtype);
  const size_t row_bytes = static_cast<size_t>(out_dims[axis]) * inner_bytes;
  if (outer == 0 || row_bytes == 0) return;
  const hipStream_t stream = current_stream(state);
  size_t column = 0;
  // Each input is a [outer, chunk] block of the output's [outer, row] rows: one 2D copy.
  for (int32_t i = 0; i < args.n_inputs; ++i) {
    const hipdnn_ep_tensor_ref_t& in = args.inputs[i];
    const size_t chunk = static_cast<size_t>(in.dims[axis]) * inner_bytes;
    if (chunk == 0) continue;
    if (hipError_t e = hipMemcpy2DAsync(static_cast<char*>(out.data) + column, row_bytes, in.data, chunk, chunk,
                                        static_cast<size_t>(outer), hipMemcpyDeviceToDevice, stream);
        e != hipSuccess) {
      fail(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text("concat: copying input " + std::to_string(i), e));
    }
    column += chunk;
  }
}

void slice(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims in_strides = contiguous_strides(dims_of(in));
  const int64_t* starts = int64_data(args.inputs[1]);  // host memory
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
  strided_copy(state, in.data, offset, strides, args.outputs[0].data, dims_of(args.outputs[0]), dtype_size(in.dtype));
}

void gather_elements(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& data = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& indices = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_GATHER_ELEMENTS_INT_ATTR_AXIS]);
  const Dims shape = dims_of(indices);
  const int64_t n = element_count(shape);
  if (n == 0) return;
  const Dims data_strides = contiguous_strides(dims_of(data));
  Dims skip_axis = data_strides;
  skip_axis[axis] = 0;  // the axis coordinate comes from the index
  const Layout<2> l = make_layout<2>(shape, {contiguous_strides(shape), skip_axis});
  DataErrorRecord* errors = gpu_device(state).data_errors();
  const hipStream_t stream = current_stream(state);
  const int64_t axis_len = dims_of(data)[axis];
  const auto axis_attr = static_cast<int64_t>(axis);
  dispatch_by_size(dtype_size(data.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (indices.dtype == HIPDNN_EP_DTYPE_INT32) {
      gather_elements_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          static_cast<const T*>(data.data), static_cast<const int32_t*>(indices.data), static_cast<T*>(out.data), l, n,
          axis_attr, axis_len, data_strides[axis], errors);
    } else {
      gather_elements_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          static_cast<const T*>(data.data), static_cast<const int64_t*>(indices.data), static_cast<T*>(out.data), l, n,
          axis_attr, axis_len, data_strides[axis], errors);
    }
  });
  check_launch("gather_elements");
}

void gather(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& data = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& indices = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const auto axis = static_cast<size_t>(args.int_attrs[HIPDNN_EP_KERNEL_GATHER_INT_ATTR_AXIS]);
  const Dims dims = dims_of(data);
  const int64_t axis_len = dims[axis];
  const int64_t inner = dims_product(dims, axis + 1, dims.size());
  const int64_t n_indices = element_count(indices);
  const int64_t n = element_count(out);
  if (n == 0) return;
  DataErrorRecord* errors = gpu_device(state).data_errors();
  const hipStream_t stream = current_stream(state);
  const bool idx32 = indices.dtype == HIPDNN_EP_DTYPE_INT32;
  const auto axis_attr = static_cast<int64_t>(axis);
  dispatch_by_size(dtype_size(data.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (idx32) {
      gather_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(data.data),
                                                        static_cast<const int32_t*>(indices.data),
                                                        static_cast<T*>(out.data), n, n_indices, axis_attr, axis_len,
                                                        inner, errors);
    } else {
      gather_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(data.data),
                                                        static_cast<const int64_t*>(indices.data),
                                                        static_cast<T*>(out.data), n, n_indices, axis_attr, axis_len,
                                                        inner, errors);
    }
  });
  check_launch("gather");
}

void expand(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims out_dims = dims_of(args.outputs[0]);
  strided_copy(state, in.data, 0, broadcast_strides(dims_of(in), out_dims), args.outputs[0].data, out_dims,
               dtype_size(in.dtype));
}

}  // namespace hipdnn_ep::kernels::gpu
