// The runtime's C ABI as the plugin uses it, resolved at load time.
//
// The plugin opens the runtime library with dlopen instead of linking it: a
// runtime that is missing, of another ABI major, or lacking a function then
// becomes one clear error at EP creation (naming every missing function and
// both versions) instead of the loader's "undefined symbol" when ORT loads
// the plugin.  Every name and type comes from the generated header
// hipdnn_ep/runtime_abi.h; this file only lists which functions the EP calls.
#pragma once

#include <hipdnn_ep/runtime_abi.h>

#include <memory>
#include <string>

namespace hipdnn_ep {

// X-macro: the runtime functions the EP calls (declared in runtime_abi.h).
#define HIPDNN_EP_RUNTIME_FUNCTIONS(X) \
  X(hipdnn_ep_abi_version)             \
  X(hipdnn_ep_abi_manifest)            \
  X(hipdnn_ep_last_error)              \
  X(hipdnn_ep_state_options_init)      \
  X(hipdnn_ep_state_create)            \
  X(hipdnn_ep_state_destroy)           \
  X(hipdnn_ep_synchronize)             \
  X(hipdnn_ep_malloc)                  \
  X(hipdnn_ep_free)                    \
  X(hipdnn_ep_memcpy)                  \
  X(hipdnn_ep_artifact_open)           \
  X(hipdnn_ep_artifact_metadata)       \
  X(hipdnn_ep_artifact_run)            \
  X(hipdnn_ep_artifact_run_into)       \
  X(hipdnn_ep_artifact_close)          \
  X(hipdnn_ep_graph_stats)             \
  X(hipdnn_ep_state_set_stream)        \
  X(hipdnn_ep_stream_create)           \
  X(hipdnn_ep_stream_destroy)          \
  X(hipdnn_ep_stream_synchronize)      \
  X(hipdnn_ep_memcpy_on_stream)        \
  X(hipdnn_ep_event_create)            \
  X(hipdnn_ep_event_record)            \
  X(hipdnn_ep_stream_wait_event)       \
  X(hipdnn_ep_event_synchronize)       \
  X(hipdnn_ep_event_destroy)

class RuntimeApi {
 public:
#define HIPDNN_EP_DECLARE_POINTER(name) decltype(&::name) name = nullptr;
  HIPDNN_EP_RUNTIME_FUNCTIONS(HIPDNN_EP_DECLARE_POINTER)
#undef HIPDNN_EP_DECLARE_POINTER

  // Opens the runtime at `library_path` (empty: the one installed beside the
  // plugin's package, then the loader's search path) and checks its ABI.
  // Throws EpError with a complete explanation on any failure.
  static std::shared_ptr<RuntimeApi> Load(const std::string& library_path);
  ~RuntimeApi();

  const std::string& path() const { return path_; }
  uint32_t abi_version() const { return abi_version_; }

  // "<what>: <runtime's last error>" for a failed call with status `rc`.
  std::string Error(const char* what, int32_t rc) const;
  // Throws EpError(Error(what, rc)) unless rc is OK.
  void Check(const char* what, int32_t rc) const;

 private:
  RuntimeApi() = default;
  void* handle_ = nullptr;
  std::string path_;
  uint32_t abi_version_ = 0;
};

// The plugin library itself, and its directory (found with dladdr).
std::string PluginLibraryPath();
std::string PluginDirectory();

}  // namespace hipdnn_ep
