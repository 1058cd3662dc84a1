// The plugin library's only exports: ORT calls these two after dlopen.
#include <exception>

#include "ep_factory.h"

extern "C" {

__attribute__((visibility("default"))) OrtStatus* CreateEpFactories(const char* registered_name,
                                                                     const OrtApiBase* ort_api_base,
                                                                     const OrtLogger* default_logger,
                                                                     OrtEpFactory** factories, size_t max_factories,
                                                                     size_t* num_factories) {
  *num_factories = 0;
  // On ONNX Runtime older than 1.23, GetApi(23) returns null.  The refusal
  // is then reported through API version 1, which every ORT provides and
  // which already has CreateStatus.
  const OrtApi* ort = ort_api_base->GetApi(ORT_API_VERSION);
  if (ort == nullptr) {
    const OrtApi* old = ort_api_base->GetApi(1);
    const char* msg =
        "hipdnn-ep needs ONNX Runtime 1.23 or newer (ORT C API version 23); this ONNX Runtime is older. "
        "Upgrade onnxruntime.";
    return old != nullptr ? old->CreateStatus(ORT_NOT_IMPLEMENTED, msg) : nullptr;
  }
  if (max_factories < 1) {
    return ort->CreateStatus(ORT_INVALID_ARGUMENT, "hipdnn-ep: ORT offered no room for an EP factory");
  }
  const OrtEpApi* ep_api = ort->GetEpApi();
  try {
    hipdnn_ep::ApiPtrs api{*ort, *ep_api, ort->GetModelEditorApi()};
    factories[0] = new hipdnn_ep::HipdnnEpFactory(registered_name, api, *default_logger);
    *num_factories = 1;
  } catch (const std::exception& e) {
    return ort->CreateStatus(ORT_FAIL, e.what());
  }
  return nullptr;
}

__attribute__((visibility("default"))) OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) {
  delete static_cast<hipdnn_ep::HipdnnEpFactory*>(factory);
  return nullptr;
}

}  // extern "C"
