#include "ep_factory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ep.h"
#include "ep_allocator.h"
#include "ep_context.h"
#include "ep_data_transfer.h"
#include "ep_options.h"
#include "ep_stream.h"
#include "sha256.h"

#ifndef HIPDNN_EP_VERSION
#error "HIPDNN_EP_VERSION must be defined by the build"
#endif

namespace hipdnn_ep {

namespace {
constexpr uint32_t kVendorNvidia = 0x10DE;
constexpr uint32_t kVendorAmd = 0x1002;

const char* BackendName(int32_t backend) {
  switch (backend) {
    case HIPDNN_EP_BACKEND_CUDA: return "cuda";
    case HIPDNN_EP_BACKEND_HIP: return "hip";
    default: return "cpu";
  }
}

// Adapts the allocators of the factory for ReleaseAllocator.
struct OwnedAllocator : EpAllocator {
  using EpAllocator::EpAllocator;
};
}  // namespace

HipdnnEpFactory::HipdnnEpFactory(const char* registered_name, const ApiPtrs& api, const OrtLogger& default_logger)
    : OrtEpFactory{}, ApiPtrs(api), registered_name_(registered_name ? registered_name : kEpName),
      default_logger_(default_logger) {
  ort_version_supported = ORT_API_VERSION;
  GetName = GetNameImpl;
  GetVendor = GetVendorImpl;
  GetVendorId = GetVendorIdImpl;
  GetVersion = GetVersionImpl;
  GetSupportedDevices = GetSupportedDevicesImpl;
  CreateEp = CreateEpImpl;
  ReleaseEp = ReleaseEpImpl;
  ValidateCompiledModelCompatibilityInfo = ValidateCompiledModelCompatibilityInfoImpl;
  CreateAllocator = CreateAllocatorImpl;
  ReleaseAllocator = ReleaseAllocatorImpl;
  CreateDataTransfer = CreateDataTransferImpl;
  IsStreamAware = IsStreamAwareImpl;
  CreateSyncStreamForDevice = CreateSyncStreamForDeviceImpl;
  const char* hook = getenv("HIPDNN_EP_TEST_HOST_AS_DEVICE");
  host_as_device_ = hook != nullptr && std::strcmp(hook, "1") == 0;
}

HipdnnEpFactory::~HipdnnEpFactory() {
  for (GpuMemory& m : gpu_memory_) ort.ReleaseMemoryInfo(m.info);
}

std::shared_ptr<RuntimeApi> HipdnnEpFactory::Runtime(const std::string& library_path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runtimes_.find(library_path);
  if (it != runtimes_.end()) return it->second;
  auto err = runtime_errors_.find(library_path);
  if (err != runtime_errors_.end()) throw EpError(err->second);
  try {
    auto rt = RuntimeApi::Load(library_path);
    runtimes_[library_path] = rt;
    return rt;
  } catch (const std::exception& e) {
    runtime_errors_[library_path] = e.what();
    throw;
  }
}

namespace {

// "size mtime_ns" of a file, or "" when it cannot be read.
std::string FileStamp(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return std::to_string(st.st_size) + " " +
         std::to_string(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
}

// The variables of this process's environment, which the compiler process
// inherits, that change which hipdnn_ep_compiler an interpreter imports
// (its module path, home and user site), as "NAME=value" or "NAME unset"
// lines.  The same interpreter under another PYTHONPATH may run another
// compiler release, with files of its own; a kept answer holds only under the
// environment it was given in.
std::string ImportEnvironment() {
  static const char* const kNames[] = {"PYTHONPATH",       "PYTHONHOME",       "PYTHONUSERBASE", "PYTHONNOUSERSITE",
                                       "PYTHONPLATLIBDIR", "PYTHONSAFEPATH",   "HOME"};
  std::string lines;
  for (const char* name : kNames) {
    const char* value = getenv(name);
    lines += std::string(name) + (value != nullptr ? "=" + std::string(value) : std::string(" unset")) + "\n";
  }
  return lines;
}

// The files a kept capabilities answer depends on: the compiler's own list
// and the interpreter (or wrapper) the EP runs.
std::vector<std::string> StampedFiles(const CompileClient& client, const CompilerCapabilities& caps) {
  std::vector<std::string> files = caps.install_files;
  if (client.python().find('/') != std::string::npos) files.push_back(client.python());
  return files;
}

}  // namespace

CompilerCapabilities HipdnnEpFactory::Capabilities(const CompileClient& client, const PrivateDir* cache) {
  // Not held while the compiler answers would allow duplicate queries; the
  // query is short and happens once, so holding the lock is simpler.
  std::lock_guard<std::mutex> lock(capabilities_mu_);
  auto it = capabilities_.find(client.python());
  if (it != capabilities_.end()) return it->second;
  auto err = capability_errors_.find(client.python());
  if (err != capability_errors_.end()) throw EpError(err->second);
  // The kept answers' folder, reached through the cache's descriptor (made
  // when an answer is first kept).
  PrivateDir kept_dir;
  bool keep = cache != nullptr;
  if (cache) {
    try {
      kept_dir = cache->Sub("compilers", false);
    } catch (const std::exception&) {  // not a usable folder: ask the compiler, keep nothing
      keep = false;
    }
  }
  const std::string environment = ImportEnvironment();
  const std::string kept = Sha256Hex(client.python() + "\n" + environment) + ".json";
  if (kept_dir.is_open() && kept_dir.Exists(kept)) {
    try {
      const json::Json saved =
          json::Parse(kept_dir.Read(kept, "kept compiler capabilities", json::kMaxAnswerBytes), json::kMaxAnswerBytes,
                      "the kept compiler capabilities " + kept);
      CompilerCapabilities caps = CompileClient::ParseCapabilities(json::Member(saved, "capabilities"));
      bool fresh = json::Member(saved, "python").is_string() &&
                   json::String(json::Member(saved, "python")) == client.python() &&
                   json::Member(saved, "environment").is_string() &&
                   json::String(json::Member(saved, "environment")) == environment &&
                   !caps.install_files.empty() && !caps.version.empty();
      const std::vector<std::string> files = StampedFiles(client, caps);
      const json::Json::array_t& stamps = json::Items(json::Member(saved, "stamps"));
      fresh = fresh && stamps.size() == files.size();
      for (size_t i = 0; fresh && i < files.size(); ++i) {
        const std::string now = FileStamp(files[i]);
        fresh = !now.empty() && json::String(stamps[i]) == now;
      }
      if (fresh) {
        capabilities_[client.python()] = caps;
        return caps;
      }
    } catch (const std::exception&) {  // unreadable: ask the compiler
    }
  }
  try {
    std::string raw;
    CompilerCapabilities caps = client.Capabilities(&raw);
    capabilities_[client.python()] = caps;
    if (keep && !caps.install_files.empty()) {
      json::Json stamps = json::Json::array();
      for (const std::string& file : StampedFiles(client, caps)) stamps.push_back(FileStamp(file));
      const std::string part = kept + "." + std::to_string(getpid()) + "." + Sha256Hex(RandomBytes(8)).substr(0, 8) +
                               ".part";
      try {
        // The answer as the compiler wrote it (it parsed within the bounds a moment ago).
        const json::Json kept_answer = {
            {"python", client.python()},
            {"environment", environment},
            {"stamps", std::move(stamps)},
            {"capabilities", json::Parse(raw, json::kMaxAnswerBytes, "the compiler's answer")}};
        if (!kept_dir.is_open()) kept_dir = cache->Sub("compilers", true);
        kept_dir.WriteNew(part, json::Dump(kept_answer, "the compiler's capabilities"), 0644);
        if (!kept_dir.MoveTo(part, kept_dir, kept)) kept_dir.RemoveTree(part);
      } catch (const std::exception&) {  // not kept: asked again next time
      }
    }
    return caps;
  } catch (const CompilerTimeout&) {
    throw;  // not an answer: a later session, maybe with a longer compile_timeout, asks again
  } catch (const std::exception& e) {
    capability_errors_[client.python()] = e.what();
    throw;
  }
}

std::shared_ptr<RuntimeState> HipdnnEpFactory::DeviceState(int32_t backend, int32_t device_id) {
  auto rt = Runtime("");
  std::lock_guard<std::mutex> lock(mu_);
  auto& state = device_states_[{backend, device_id}];
  if (!state) state = std::make_shared<RuntimeState>(rt, StateConfig{backend, device_id});
  return state;
}

const char* ORT_API_CALL HipdnnEpFactory::GetNameImpl(const OrtEpFactory*) noexcept { return kEpName; }
const char* ORT_API_CALL HipdnnEpFactory::GetVendorImpl(const OrtEpFactory*) noexcept { return kEpVendor; }
uint32_t ORT_API_CALL HipdnnEpFactory::GetVendorIdImpl(const OrtEpFactory*) noexcept { return 0; }
const char* ORT_API_CALL HipdnnEpFactory::GetVersionImpl(const OrtEpFactory*) noexcept { return HIPDNN_EP_VERSION; }

OrtStatus* ORT_API_CALL HipdnnEpFactory::GetSupportedDevicesImpl(OrtEpFactory* this_ptr,
                                                                 const OrtHardwareDevice* const* devices,
                                                                 size_t num_devices, OrtEpDevice** ep_devices,
                                                                 size_t max_ep_devices,
                                                                 size_t* num_ep_devices) noexcept {
  auto* self = static_cast<HipdnnEpFactory*>(this_ptr);
  const OrtApi& ort = self->ort;
  *num_ep_devices = 0;
  return Guard(ort, [&] {
    int32_t gpu_ordinal = 0;
    for (size_t i = 0; i < num_devices && *num_ep_devices < max_ep_devices; ++i) {
      const OrtHardwareDevice* hw = devices[i];
      OrtHardwareDeviceType type = ort.HardwareDevice_Type(hw);
      int32_t backend = -1;
      int32_t device_id = 0;
      if (type == OrtHardwareDeviceType_CPU) {
        // The CPU backend is always available; a GPU backend can still be
        // chosen for it by option (ORT may not discover the GPU).
        backend = HIPDNN_EP_BACKEND_CPU;
      } else if (type == OrtHardwareDeviceType_GPU) {
        uint32_t vendor = ort.HardwareDevice_VendorId(hw);
        if (vendor == kVendorNvidia) backend = HIPDNN_EP_BACKEND_CUDA;
        if (vendor == kVendorAmd) backend = HIPDNN_EP_BACKEND_HIP;
        device_id = gpu_ordinal++;
      }
      if (backend < 0) continue;
      if (backend != HIPDNN_EP_BACKEND_CPU) {
        // Offer a GPU only when the installed runtime can drive it: ORT creates
        // the device's data transfer while registering the library, so a
        // runtime built without this backend (or none at all) would otherwise
        // fail the registration of the whole EP, CPU device included.
        try {
          self->DeviceState(backend, device_id);
        } catch (const std::exception& e) {
          Log(ort, self->default_logger_, ORT_LOGGING_LEVEL_WARNING,
              std::string("hipdnn-ep: not offering ") + BackendName(backend) + " device " +
                  std::to_string(device_id) + ": " + e.what());
          continue;
        }
      }
      OrtKeyValuePairs* meta = nullptr;
      ort.CreateKeyValuePairs(&meta);
      ort.AddKeyValuePair(meta, options::kBackend, BackendName(backend));
      ort.AddKeyValuePair(meta, options::kDeviceId, std::to_string(device_id).c_str());
      ort.AddKeyValuePair(meta, kRegistrationNameKey, self->registered_name_.c_str());
      ort.AddKeyValuePair(meta, kPluginLibraryKey, PluginLibraryPath().c_str());
      OrtEpDevice* ep_device = nullptr;
      OrtStatus* st = self->ep.CreateEpDevice(self, hw, meta, nullptr, &ep_device);
      ort.ReleaseKeyValuePairs(meta);
      ThrowIfError(ort, st);
      if (backend != HIPDNN_EP_BACKEND_CPU || self->host_as_device_) {
        OrtMemoryInfo* info = nullptr;
        ThrowIfError(ort, ort.CreateMemoryInfo_V2("HipdnnEp_GPU", OrtMemoryInfoDeviceType_GPU,
                                                  ort.HardwareDevice_VendorId(hw), device_id,
                                                  OrtDeviceMemoryType_DEFAULT, 0, OrtDeviceAllocator, &info));
        self->gpu_memory_.push_back({info, backend, device_id});
        ThrowIfError(ort, self->ep.EpDevice_AddAllocatorInfo(ep_device, info));
      }
      ep_devices[(*num_ep_devices)++] = ep_device;
    }
  });
}

OrtStatus* ORT_API_CALL HipdnnEpFactory::CreateEpImpl(OrtEpFactory* this_ptr, const OrtHardwareDevice* const*,
                                                      const OrtKeyValuePairs* const* ep_metadata,
                                                      size_t num_devices, const OrtSessionOptions* session_options,
                                                      const OrtLogger* logger, OrtEp** out) noexcept {
  auto* self = static_cast<HipdnnEpFactory*>(this_ptr);
  *out = nullptr;
  return Guard(self->ort, [&] {
    std::string device_backend = "cpu", device_id = "0";
    if (num_devices > 0 && ep_metadata && ep_metadata[0]) {
      const char* b = self->ort.GetKeyValue(ep_metadata[0], options::kBackend);
      const char* d = self->ort.GetKeyValue(ep_metadata[0], options::kDeviceId);
      if (b) device_backend = b;
      if (d) device_id = d;
    }
    EpConfig config = EpConfig::FromSession(self->ort, session_options, device_backend, device_id);
    *out = new HipdnnEp(*self, std::move(config), *logger);
  });
}

void ORT_API_CALL HipdnnEpFactory::ReleaseEpImpl(OrtEpFactory*, OrtEp* ep) noexcept {
  delete static_cast<HipdnnEp*>(ep);
}

OrtStatus* ORT_API_CALL HipdnnEpFactory::ValidateCompiledModelCompatibilityInfoImpl(
    OrtEpFactory* this_ptr, const OrtHardwareDevice* const*, size_t, const char* compatibility_info,
    OrtCompiledModelCompatibility* model_compatibility) noexcept {
  auto* self = static_cast<HipdnnEpFactory*>(this_ptr);
  return Guard(self->ort, [&] {
    uint32_t abi = 0;
    try {
      abi = self->Runtime("")->abi_version();
    } catch (const std::exception&) {
      abi = 0;  // no usable runtime: nothing compiled for us can run
    }
    *model_compatibility = CompatibilityVerdict(compatibility_info ? compatibility_info : "", abi);
  });
}

OrtStatus* ORT_API_CALL HipdnnEpFactory::CreateAllocatorImpl(OrtEpFactory* this_ptr, const OrtMemoryInfo* memory_info,
                                                             const OrtKeyValuePairs*,
                                                             OrtAllocator** allocator) noexcept {
  auto* self = static_cast<HipdnnEpFactory*>(this_ptr);
  *allocator = nullptr;
  return Guard(self->ort, [&] {
    for (const GpuMemory& m : self->gpu_memory_) {
      int cmp = 1;
      ThrowIfError(self->ort, self->ort.CompareMemoryInfo(m.info, memory_info, &cmp));
      if (cmp == 0) {
        *allocator = new OwnedAllocator(self->DeviceState(m.backend, m.device_id), self->Runtime(""), m.info);
        return;
      }
    }
    throw EpError("hipdnn-ep: no allocator for the requested memory info", ORT_INVALID_ARGUMENT);
  });
}

void ORT_API_CALL HipdnnEpFactory::ReleaseAllocatorImpl(OrtEpFactory*, OrtAllocator* allocator) noexcept {
  delete static_cast<OwnedAllocator*>(allocator);
}

OrtStatus* ORT_API_CALL HipdnnEpFactory::CreateDataTransferImpl(OrtEpFactory* this_ptr,
                                                                OrtDataTransferImpl** data_transfer) noexcept {
  auto* self = static_cast<HipdnnEpFactory*>(this_ptr);
  *data_transfer = nullptr;
  if (self->gpu_memory_.empty()) return nullptr;  // CPU only: ORT's own copies suffice
  return Guard(self->ort, [&] {
    const GpuMemory& m = self->gpu_memory_.front();
    *data_transfer = new EpDataTransfer(*self, self->DeviceState(m.backend, m.device_id), self->Runtime(""));
  });
}

// Stream aware once a GPU device is offered: ORT then asks for a stream for each GPU memory device
// of a session and hands it to Compute and the data transfer. The CPU backend has no streams (ORT
// creates none for host memory either).
bool ORT_API_CALL HipdnnEpFactory::IsStreamAwareImpl(const OrtEpFactory* this_ptr) noexcept {
  return !static_cast<const HipdnnEpFactory*>(this_ptr)->gpu_memory_.empty();
}

OrtStatus* ORT_API_CALL HipdnnEpFactory::CreateSyncStreamForDeviceImpl(OrtEpFactory* this_ptr,
                                                                       const OrtMemoryDevice* memory_device,
                                                                       const OrtKeyValuePairs*,
                                                                       OrtSyncStreamImpl** stream) noexcept {
  auto* self = static_cast<HipdnnEpFactory*>(this_ptr);
  *stream = nullptr;
  return Guard(self->ort, [&] {
    for (const GpuMemory& m : self->gpu_memory_) {
      if (self->ep.MemoryDevice_AreEqual(self->ep.MemoryInfo_GetMemoryDevice(m.info), memory_device)) {
        *stream = new EpSyncStream(*self, self->DeviceState(m.backend, m.device_id), self->Runtime(""));
        return;
      }
    }
    throw EpError("hipdnn-ep: ONNX Runtime asked for a stream on a memory device this EP did not offer (" +
                      std::to_string(self->ep.MemoryDevice_GetDeviceType(memory_device)) + ", device " +
                      std::to_string(self->ep.MemoryDevice_GetDeviceId(memory_device)) +
                      "); streams exist for the GPU devices of GetSupportedDevices only",
                  ORT_INVALID_ARGUMENT);
  });
}

}  // namespace hipdnn_ep
