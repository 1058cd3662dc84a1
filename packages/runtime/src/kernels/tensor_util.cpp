#include "kernels/tensor_util.h"

#include <algorithm>
#include <limits>

namespace hipdnn_ep::kernels {

void fail(int32_t status, std::string message) { throw KernelError(status, std::move(message)); }

void fail_invalid(std::string message) { fail(HIPDNN_EP_STATUS_INVALID_ARGUMENT, std::move(message)); }

// Both from the manifest's element_bytes table (HIPDNN_EP_DTYPES, generated into the header).
size_t dtype_size(int32_t dtype) {
  switch (dtype) {
#define HIPDNN_EP_DTYPE_CASE(name, code, bytes) \
  case code: return bytes;
    HIPDNN_EP_DTYPES(HIPDNN_EP_DTYPE_CASE)
#undef HIPDNN_EP_DTYPE_CASE
    default: return 0;
  }
}

std::string dtype_name(int32_t dtype) {
  switch (dtype) {
#define HIPDNN_EP_DTYPE_CASE(name, code, bytes) \
  case code: return #name;
    HIPDNN_EP_DTYPES(HIPDNN_EP_DTYPE_CASE)
#undef HIPDNN_EP_DTYPE_CASE
    default: return "dtype " + std::to_string(dtype);
  }
}

std::string format_dims(const Dims& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

Dims dims_of(const hipdnn_ep_tensor_ref_t& tensor) {
  if (tensor.rank <= 0) return {};
  return Dims(tensor.dims, tensor.dims + tensor.rank);
}

int64_t dims_product(const Dims& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

int64_t element_count(const Dims& dims) { return dims_product(dims, 0, dims.size()); }

int64_t element_count(const hipdnn_ep_tensor_ref_t& tensor) { return element_count(dims_of(tensor)); }

uint64_t tensor_bytes(const hipdnn_ep_tensor_ref_t& tensor) {
  uint64_t bytes = dtype_size(tensor.dtype);
  for (int32_t d = 0; d < tensor.rank; ++d) bytes *= static_cast<uint64_t>(tensor.dims[d]);
  return bytes;
}

Dims contiguous_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

bool broadcast_shapes(const Dims& a, const Dims& b, Dims* out) {
  const size_t rank = std::max(a.size(), b.size());
  Dims result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align right: position i of the result reads a[ia] and b[ib].
    const int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) return false;
    result[i] = da == 1 ? db : da;
  }
  *out = std::move(result);
  return true;
}

bool broadcasts_to(const Dims& from, const Dims& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != to[lead + i] && from[i] != 1) return false;
  }
  return true;
}

Dims broadcast_strides(const Dims& from, const Dims& to) {
  const Dims own = contiguous_strides(from);
  const size_t lead = to.size() - from.size();
  Dims strides(to.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) strides[lead + i] = from[i] == 1 ? 0 : own[i];
  return strides;
}

}  // namespace hipdnn_ep::kernels
