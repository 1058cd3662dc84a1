// Small shared vocabulary of the plugin: the ORT API bundle and error macros.
#pragma once

#include <onnxruntime_c_api.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace hipdnn_ep {

// The EP's name: ORT's provider name, the session option prefix (lower-cased) and the
// `source` of the EPContext nodes it writes.
constexpr const char* kEpName = "HipdnnEp";

// The three ORT API tables every object of the plugin needs.
struct ApiPtrs {
  const OrtApi& ort;
  const OrtEpApi& ep;
  const OrtModelEditorApi* editor;  // null in a minimal ORT build
};

// An error carrying the ORT error code it should become at the C boundary.
class EpError : public std::runtime_error {
 public:
  explicit EpError(std::string msg, OrtErrorCode code = ORT_FAIL)
      : std::runtime_error(std::move(msg)), code_(code) {}
  OrtErrorCode code() const { return code_; }

 private:
  OrtErrorCode code_;
};

// Throws EpError with ORT's message if `status` is an error (and releases it).
void ThrowIfError(const OrtApi& ort, OrtStatus* status);

// Runs `fn`, turning any exception into an OrtStatus for the C boundary.
template <typename Fn>
OrtStatus* Guard(const OrtApi& ort, Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const EpError& e) {
    return ort.CreateStatus(e.code(), e.what());
  } catch (const std::exception& e) {
    return ort.CreateStatus(ORT_FAIL, e.what());
  } catch (...) {
    return ort.CreateStatus(ORT_FAIL, "hipdnn-ep: unknown error");
  }
}

#define HIPDNN_EP_THROW_IF_ERROR(ort, expr) ::hipdnn_ep::ThrowIfError((ort), (expr))

// Reads a session config entry; returns `fallback` when it is absent.
std::string GetSessionConfig(const OrtApi& ort, const OrtSessionOptions* so, const std::string& key,
                             const std::string& fallback);

// Byte size of one element of an ONNX data type; 0 for unsupported types.
size_t ElementSize(int32_t onnx_dtype);

// Logs through ORT's logger under the "HipdnnEp" category (a logging failure is ignored).
void Log(const OrtApi& ort, const OrtLogger& logger, OrtLoggingLevel level, const std::string& msg);

// Dims, dtype (ONNX code), data pointer and byte size of a tensor OrtValue.
struct TensorData {
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  const void* data = nullptr;
  size_t size = 0;
};

// Reads a tensor OrtValue's TensorData; throws EpError for string tensors or an ORT error.
TensorData ReadTensorValue(const OrtApi& ort, const OrtValue* value);

}  // namespace hipdnn_ep
