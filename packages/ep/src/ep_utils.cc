#include "ep_utils.h"

#include <hipdnn_ep/runtime_abi.h>

namespace hipdnn_ep {

void ThrowIfError(const OrtApi& ort, OrtStatus* status) {
  if (status == nullptr) return;
  std::string msg = ort.GetErrorMessage(status);
  OrtErrorCode code = ort.GetErrorCode(status);
  ort.ReleaseStatus(status);
  throw EpError(msg, code);
}

std::string GetSessionConfig(const OrtApi& ort, const OrtSessionOptions* so, const std::string& key,
                             const std::string& fallback) {
  int has = 0;
  ThrowIfError(ort, ort.HasSessionConfigEntry(so, key.c_str(), &has));
  if (!has) return fallback;
  size_t size = 0;
  ThrowIfError(ort, ort.GetSessionConfigEntry(so, key.c_str(), nullptr, &size));
  std::string value(size, '\0');
  ThrowIfError(ort, ort.GetSessionConfigEntry(so, key.c_str(), value.data(), &size));
  value.resize(size > 0 ? size - 1 : 0);  // size counts the terminating NUL
  return value;
}

size_t ElementSize(int32_t onnx_dtype) {
  switch (onnx_dtype) {  // the manifest's element_bytes (HIPDNN_EP_DTYPES, generated)
#define HIPDNN_EP_DTYPE_CASE(name, code, bytes) \
  case code: return bytes;
    HIPDNN_EP_DTYPES(HIPDNN_EP_DTYPE_CASE)
#undef HIPDNN_EP_DTYPE_CASE
    default: return 0;
  }
}

void Log(const OrtApi& ort, const OrtLogger& logger, OrtLoggingLevel level, const std::string& msg) {
  OrtStatus* st = ort.Logger_LogMessage(&logger, level, msg.c_str(), ORT_FILE, __LINE__, "HipdnnEp");
  if (st) ort.ReleaseStatus(st);
}

TensorData ReadTensorValue(const OrtApi& ort, const OrtValue* value) {
  TensorData d;
  OrtTensorTypeAndShapeInfo* info = nullptr;
  ThrowIfError(ort, ort.GetTensorTypeAndShape(value, &info));
  ONNXTensorElementDataType et;
  size_t rank = 0;
  OrtStatus* st = ort.GetTensorElementType(info, &et);
  if (!st) st = ort.GetDimensionsCount(info, &rank);
  if (!st) { d.dims.resize(rank); st = ort.GetDimensions(info, d.dims.data(), rank); }
  ort.ReleaseTensorTypeAndShapeInfo(info);
  ThrowIfError(ort, st);
  d.dtype = static_cast<int32_t>(et);
  if (et == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) throw EpError("hipdnn-ep: string tensors are not supported");
  ThrowIfError(ort, ort.GetTensorData(value, &d.data));
  ThrowIfError(ort, ort.GetTensorSizeInBytes(value, &d.size));
  return d;
}

}  // namespace hipdnn_ep
