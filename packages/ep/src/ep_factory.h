// The OrtEpFactory: advertises devices, creates EPs, and owns what EPs of
// one process share (the runtime library, the compiler's capabilities, the
// device allocators).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compile_client.h"
#include "ep_utils.h"
#include "private_files.h"
#include "runtime_api.h"
#include "runtime_state.h"

namespace hipdnn_ep {

constexpr const char* kEpVendor = "hipdnn-ep";
// Keys of each EP device's metadata besides the backend and device id: the
// name the library was registered under and the library file itself, which
// hipdnn_ep.register() compares with what it is asked to register.
constexpr const char* kRegistrationNameKey = "registration_name";
constexpr const char* kPluginLibraryKey = "plugin_library";

class HipdnnEpFactory : public OrtEpFactory, public ApiPtrs {
 public:
  HipdnnEpFactory(const char* registered_name, const ApiPtrs& api, const OrtLogger& default_logger);
  ~HipdnnEpFactory();

  // The runtime library, loaded on first use (thread-safe).  A failure is
  // remembered per path and thrown again with the same message.
  std::shared_ptr<RuntimeApi> Runtime(const std::string& library_path);
  // The compiler's capabilities for one interpreter, queried once per process
  // (thread-safe).  With `cache` (the compile cache folder), the answer is also kept there for later
  // processes, for as long as the compiler's install files are unchanged, so a
  // process whose graphs are all in the compile cache starts no compiler.
  CompilerCapabilities Capabilities(const CompileClient& client, const PrivateDir* cache = nullptr);

  const std::string& registered_name() const { return registered_name_; }

  // A test hook (HIPDNN_EP_TEST_HOST_AS_DEVICE=1 when the library is registered): the CPU backend's
  // EpDevice offers its host memory to ONNX Runtime as a GPU memory device, so ORT takes the paths it
  // takes for a GPU backend (device placement of the fused nodes' inputs, this factory's allocator,
  // data transfer and streams) on a machine without a GPU.
  bool HostAsDevice() const { return host_as_device_; }

  // The state backing device allocations and copies for GPU EpDevices (one per backend and device,
  // for the factory's life); it also holds the device copies of the weights the EP keeps itself,
  // shared by every runtime state of that device.
  std::shared_ptr<RuntimeState> DeviceState(int32_t backend, int32_t device_id);

 private:
  static const char* ORT_API_CALL GetNameImpl(const OrtEpFactory* this_ptr) noexcept;
  static const char* ORT_API_CALL GetVendorImpl(const OrtEpFactory* this_ptr) noexcept;
  static uint32_t ORT_API_CALL GetVendorIdImpl(const OrtEpFactory* this_ptr) noexcept;
  static const char* ORT_API_CALL GetVersionImpl(const OrtEpFactory* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL GetSupportedDevicesImpl(OrtEpFactory* this_ptr, const OrtHardwareDevice* const* devices,
                                                         size_t num_devices, OrtEpDevice** ep_devices,
                                                         size_t max_ep_devices, size_t* num_ep_devices) noexcept;
  static OrtStatus* ORT_API_CALL CreateEpImpl(OrtEpFactory* this_ptr, const OrtHardwareDevice* const* devices,
                                              const OrtKeyValuePairs* const* ep_metadata, size_t num_devices,
                                              const OrtSessionOptions* session_options, const OrtLogger* logger,
                                              OrtEp** ep) noexcept;
  static void ORT_API_CALL ReleaseEpImpl(OrtEpFactory* this_ptr, OrtEp* ep) noexcept;
  static OrtStatus* ORT_API_CALL ValidateCompiledModelCompatibilityInfoImpl(
      OrtEpFactory* this_ptr, const OrtHardwareDevice* const* devices, size_t num_devices,
      const char* compatibility_info, OrtCompiledModelCompatibility* model_compatibility) noexcept;
  static OrtStatus* ORT_API_CALL CreateAllocatorImpl(OrtEpFactory* this_ptr, const OrtMemoryInfo* memory_info,
                                                     const OrtKeyValuePairs* allocator_options,
                                                     OrtAllocator** allocator) noexcept;
  static void ORT_API_CALL ReleaseAllocatorImpl(OrtEpFactory* this_ptr, OrtAllocator* allocator) noexcept;
  static OrtStatus* ORT_API_CALL CreateDataTransferImpl(OrtEpFactory* this_ptr,
                                                        OrtDataTransferImpl** data_transfer) noexcept;
  static bool ORT_API_CALL IsStreamAwareImpl(const OrtEpFactory* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL CreateSyncStreamForDeviceImpl(OrtEpFactory* this_ptr,
                                                               const OrtMemoryDevice* memory_device,
                                                               const OrtKeyValuePairs* stream_options,
                                                               OrtSyncStreamImpl** stream) noexcept;


  std::string registered_name_;
  const OrtLogger& default_logger_;
  bool host_as_device_ = false;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<RuntimeApi>> runtimes_;
  std::map<std::string, std::string> runtime_errors_;
  // Held while a capabilities query runs (it may take up to compile_timeout),
  // so that it never holds up the runtime's loading in another session.
  std::mutex capabilities_mu_;
  std::map<std::string, CompilerCapabilities> capabilities_;
  std::map<std::string, std::string> capability_errors_;  // never a timeout
  // GPU memory infos registered on EpDevices, with their backend and ordinal.
  struct GpuMemory {
    OrtMemoryInfo* info;
    int32_t backend;
    int32_t device_id;
  };
  std::vector<GpuMemory> gpu_memory_;
  std::map<std::pair<int32_t, int32_t>, std::shared_ptr<RuntimeState>> device_states_;
};

}  // namespace hipdnn_ep
