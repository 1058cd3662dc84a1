// Shared helpers of the kernels: dtype facts, shapes and strides, numpy
// broadcasting, a strided row iterator and dtype dispatch templates.
#ifndef HIPDNN_EP_KERNELS_TENSOR_UTIL_H_
#define HIPDNN_EP_KERNELS_TENSOR_UTIL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hipdnn_ep/runtime_abi.h"
#include "kernels/half.h"

namespace hipdnn_ep::kernels {

// Thrown by validation and by kernel bodies; the extern "C" boundary turns
// it into the status and prefixes the message with the kernel's name.
class KernelError : public std::exception {
 public:
  KernelError(int32_t status, std::string message) : status_(status), message_(std::move(message)) {}
  int32_t status() const noexcept { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  int32_t status_;
  std::string message_;
};

[[noreturn]] void fail(int32_t status, std::string message);
[[noreturn]] void fail_invalid(std::string message);

using Dims = std::vector<int64_t>;

// Bytes per element; 0 for a code that is not a hipdnn_ep_dtype.
size_t dtype_size(int32_t dtype);
// "FLOAT32", ... or "dtype <code>" for an unknown code.
std::string dtype_name(int32_t dtype);
// "[2, 3]"
std::string format_dims(const Dims& dims);

// The tensor's dims (the caller has validated rank and the dims pointer).
Dims dims_of(const hipdnn_ep_tensor_ref_t& tensor);
// Product of dims; 1 for rank 0.
int64_t element_count(const Dims& dims);
int64_t element_count(const hipdnn_ep_tensor_ref_t& tensor);
// Bytes the tensor spans: its element count times its dtype's size.
uint64_t tensor_bytes(const hipdnn_ep_tensor_ref_t& tensor);
// Product of dims[begin, end).
int64_t dims_product(const Dims& dims, size_t begin, size_t end);
// Row-major strides in elements.
Dims contiguous_strides(const Dims& dims);

// numpy broadcasting of two shapes; false if they do not broadcast.
bool broadcast_shapes(const Dims& a, const Dims& b, Dims* out);
// True if `from` broadcasts to exactly `to` (ONNX unidirectional broadcast).
bool broadcasts_to(const Dims& from, const Dims& to);
// Strides (in elements) for reading a contiguous tensor of dims `from` while
// iterating the shape `to`: aligned right, 0 where `from` broadcasts.
// Requires broadcasts_to(from, to).
Dims broadcast_strides(const Dims& from, const Dims& to);

// Iterates a shape as rows: for each innermost run it calls
// row(offsets, count, inner_strides) where offsets[i] is the element offset of
// operand i at the start of the row and inner_strides[i] its step within the
// row. Dims of size 1 are dropped and adjacent dims that are contiguous for
// every operand are merged, so the rows are as long as the layout allows.
// Does nothing when the shape has a zero dim.
template <size_t N, typename RowFn>
void for_each_row(const Dims& dims, const std::array<Dims, N>& strides, RowFn&& row) {
  // Collapse into (size, strides) from outermost to innermost.
  Dims sizes;
  std::array<Dims, N> st;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 0) return;
    if (dims[d] == 1) continue;
    bool merge = !sizes.empty();
    for (size_t i = 0; merge && i < N; ++i) merge = st[i].back() == strides[i][d] * dims[d];
    if (merge) {
      sizes.back() *= dims[d];
      for (size_t i = 0; i < N; ++i) st[i].back() = strides[i][d];
    } else {
      sizes.push_back(dims[d]);
      for (size_t i = 0; i < N; ++i) st[i].push_back(strides[i][d]);
    }
  }
  std::array<int64_t, N> offsets{};
  std::array<int64_t, N> inner{};
  if (sizes.empty()) {  // a single element
    row(offsets, int64_t{1}, inner);
    return;
  }
  const size_t last = sizes.size() - 1;
  for (size_t i = 0; i < N; ++i) inner[i] = st[i][last];
  Dims index(last, 0);
  for (;;) {
    row(offsets, sizes[last], inner);
    // Odometer over the outer dims.
    size_t d = last;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++index[d] < sizes[d]) {
        for (size_t i = 0; i < N; ++i) offsets[i] += st[i][d];
        break;
      }
      for (size_t i = 0; i < N; ++i) offsets[i] -= st[i][d] * (sizes[d] - 1);
      index[d] = 0;
    }
  }
}

// ---------------------------------------------------------------- dtypes

template <typename T>
struct TypeTag {
  using type = T;
};

// Compute type of a storage type: float for float16, itself otherwise.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<half_t> {
  using type = float;
};

template <typename T>
inline typename ComputeType<T>::type load(const T* p, int64_t i) {
  return p[i];
}
inline float load(const half_t* p, int64_t i) { return to_float(p[i]); }

template <typename T>
inline void store(T* p, int64_t i, typename ComputeType<T>::type v) {
  p[i] = v;
}
inline void store(half_t* p, int64_t i, float v) { p[i] = to_half(v); }

// Calls fn(TypeTag<T>{}) for the C++ storage type of dtype. Unlisted dtypes
// throw UNSUPPORTED naming `what`. Half (and Bool, for dispatch_any) is the
// storage type of float16 (bool): half_t (bool_t) on the host; the GPU
// kernels dispatch with their device types (gpu_common.h).
template <typename Half = half_t, typename Fn>
decltype(auto) dispatch_float(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_FLOAT32: return fn(TypeTag<float>{});
    case HIPDNN_EP_DTYPE_FLOAT16: return fn(TypeTag<Half>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(what) + " does not support dtype " + dtype_name(dtype));
}

template <typename Half = half_t, typename Fn>
decltype(auto) dispatch_numeric(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_FLOAT32: return fn(TypeTag<float>{});
    case HIPDNN_EP_DTYPE_FLOAT16: return fn(TypeTag<Half>{});
    case HIPDNN_EP_DTYPE_INT32: return fn(TypeTag<int32_t>{});
    case HIPDNN_EP_DTYPE_INT64: return fn(TypeTag<int64_t>{});
    case HIPDNN_EP_DTYPE_INT8: return fn(TypeTag<int8_t>{});
    case HIPDNN_EP_DTYPE_UINT8: return fn(TypeTag<uint8_t>{});
    case HIPDNN_EP_DTYPE_INT16: return fn(TypeTag<int16_t>{});
    case HIPDNN_EP_DTYPE_UINT16: return fn(TypeTag<uint16_t>{});
    case HIPDNN_EP_DTYPE_UINT32: return fn(TypeTag<uint32_t>{});
    case HIPDNN_EP_DTYPE_UINT64: return fn(TypeTag<uint64_t>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(what) + " does not support dtype " + dtype_name(dtype));
}

// Calls fn(TypeTag<T>{}) for the integer dtypes (the bitwise ops).
template <typename Fn>
decltype(auto) dispatch_integer(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_UINT8: return fn(TypeTag<uint8_t>{});
    case HIPDNN_EP_DTYPE_INT8: return fn(TypeTag<int8_t>{});
    case HIPDNN_EP_DTYPE_UINT16: return fn(TypeTag<uint16_t>{});
    case HIPDNN_EP_DTYPE_INT16: return fn(TypeTag<int16_t>{});
    case HIPDNN_EP_DTYPE_UINT32: return fn(TypeTag<uint32_t>{});
    case HIPDNN_EP_DTYPE_INT32: return fn(TypeTag<int32_t>{});
    case HIPDNN_EP_DTYPE_UINT64: return fn(TypeTag<uint64_t>{});
    case HIPDNN_EP_DTYPE_INT64: return fn(TypeTag<int64_t>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(what) + " does not support dtype " + dtype_name(dtype));
}

// The unsigned type that integer arithmetic on T wraps in: T's own unsigned type, or
// unsigned int for the types narrower than int (whose operands would promote to signed int,
// where a product can overflow).
template <typename T>
using WrapUnsigned = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// BOOL elements are one byte; any nonzero byte reads as true and true is
// written as 1. A struct, not bool, so that reading a byte other than 0/1 is
// not undefined behaviour.
struct bool_t {
  uint8_t value;
};

template <>
struct ComputeType<bool_t> {
  using type = bool;
};
inline bool load(const bool_t* p, int64_t i) { return p[i].value != 0; }
inline void store(bool_t* p, int64_t i, bool v) { p[i].value = v ? 1 : 0; }

// Every dtype of the ABI.
template <typename Half = half_t, typename Bool = bool_t, typename Fn>
decltype(auto) dispatch_any(int32_t dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case HIPDNN_EP_DTYPE_FLOAT32: return fn(TypeTag<float>{});
    case HIPDNN_EP_DTYPE_UINT8: return fn(TypeTag<uint8_t>{});
    case HIPDNN_EP_DTYPE_INT8: return fn(TypeTag<int8_t>{});
    case HIPDNN_EP_DTYPE_INT32: return fn(TypeTag<int32_t>{});
    case HIPDNN_EP_DTYPE_INT64: return fn(TypeTag<int64_t>{});
    case HIPDNN_EP_DTYPE_BOOL: return fn(TypeTag<Bool>{});
    case HIPDNN_EP_DTYPE_FLOAT16: return fn(TypeTag<Half>{});
    case HIPDNN_EP_DTYPE_FLOAT64: return fn(TypeTag<double>{});
    case HIPDNN_EP_DTYPE_INT16: return fn(TypeTag<int16_t>{});
    case HIPDNN_EP_DTYPE_UINT16: return fn(TypeTag<uint16_t>{});
    case HIPDNN_EP_DTYPE_UINT32: return fn(TypeTag<uint32_t>{});
    case HIPDNN_EP_DTYPE_UINT64: return fn(TypeTag<uint64_t>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(what) + " does not support dtype " + dtype_name(dtype));
}

// Data movement only needs the element width: calls fn(TypeTag<uintN_t>{}).
template <typename Fn>
decltype(auto) dispatch_by_size(size_t element_size, Fn&& fn) {
  switch (element_size) {
    case 1: return fn(TypeTag<uint8_t>{});
    case 2: return fn(TypeTag<uint16_t>{});
    case 4: return fn(TypeTag<uint32_t>{});
    case 8: return fn(TypeTag<uint64_t>{});
    default: break;
  }
  fail(HIPDNN_EP_STATUS_INTERNAL, "no copy routine for " + std::to_string(element_size) + "-byte elements");
}

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_TENSOR_UTIL_H_
