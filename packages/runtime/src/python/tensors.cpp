// Element types: numpy/DLPack <-> ONNX dtype codes (hipdnn_ep_dtype).
#include "bindings.h"

namespace hipdnn_ep::python {
namespace {

struct DtypeEntry {
  int32_t code;
  uint8_t dlpack_code;
  uint8_t bits;
  const char* numpy_name;
};

constexpr DtypeEntry kDtypes[] = {
    {HIPDNN_EP_DTYPE_FLOAT32, uint8_t(nb::dlpack::dtype_code::Float), 32, "float32"},
    {HIPDNN_EP_DTYPE_FLOAT64, uint8_t(nb::dlpack::dtype_code::Float), 64, "float64"},
    {HIPDNN_EP_DTYPE_FLOAT16, uint8_t(nb::dlpack::dtype_code::Float), 16, "float16"},
    {HIPDNN_EP_DTYPE_UINT8, uint8_t(nb::dlpack::dtype_code::UInt), 8, "uint8"},
    {HIPDNN_EP_DTYPE_INT8, uint8_t(nb::dlpack::dtype_code::Int), 8, "int8"},
    {HIPDNN_EP_DTYPE_INT32, uint8_t(nb::dlpack::dtype_code::Int), 32, "int32"},
    {HIPDNN_EP_DTYPE_INT64, uint8_t(nb::dlpack::dtype_code::Int), 64, "int64"},
    {HIPDNN_EP_DTYPE_BOOL, uint8_t(nb::dlpack::dtype_code::Bool), 8, "bool"},
    {HIPDNN_EP_DTYPE_INT16, uint8_t(nb::dlpack::dtype_code::Int), 16, "int16"},
    {HIPDNN_EP_DTYPE_UINT16, uint8_t(nb::dlpack::dtype_code::UInt), 16, "uint16"},
    {HIPDNN_EP_DTYPE_UINT32, uint8_t(nb::dlpack::dtype_code::UInt), 32, "uint32"},
    {HIPDNN_EP_DTYPE_UINT64, uint8_t(nb::dlpack::dtype_code::UInt), 64, "uint64"},
};

}  // namespace

int32_t dtype_code(const nb::dlpack::dtype& dtype) {
  for (const DtypeEntry& e : kDtypes) {
    if (dtype.code == e.dlpack_code && dtype.bits == e.bits && dtype.lanes == 1) return e.code;
  }
  raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
               "unsupported array element type (dlpack code " + std::to_string(dtype.code) + ", " +
                   std::to_string(dtype.bits) + " bits)");
}

const char* numpy_dtype_name(int32_t code) {
  for (const DtypeEntry& e : kDtypes) {
    if (e.code == code) return e.numpy_name;
  }
  raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "unknown dtype code " + std::to_string(code));
}

nb::dlpack::dtype dlpack_dtype(const std::string& numpy_name) {
  std::string known;
  for (const DtypeEntry& e : kDtypes) {
    if (numpy_name == e.numpy_name) return nb::dlpack::dtype{e.dlpack_code, e.bits, 1};
    known += (known.empty() ? "" : ", ") + std::string(e.numpy_name);
  }
  raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "unknown dtype '" + numpy_name + "' (expected one of " + known + ")");
}

size_t dtype_size(int32_t code) {
  for (const DtypeEntry& e : kDtypes) {
    if (e.code == code) return e.bits / 8;
  }
  raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "unknown dtype code " + std::to_string(code));
}

}  // namespace hipdnn_ep::python
