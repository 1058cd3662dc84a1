#include "runtime_api.h"

#include <dlfcn.h>

#include <filesystem>
#include <vector>

#include "ep_utils.h"

namespace hipdnn_ep {
namespace fs = std::filesystem;

std::string PluginLibraryPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PluginLibraryPath), &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

std::string PluginDirectory() {
  std::string library = PluginLibraryPath();
  return library.empty() ? std::string() : fs::path(library).parent_path().string();
}

namespace {

std::string VersionString(uint32_t v) {
  return std::to_string(v >> 16) + "." + std::to_string(v & 0xffff);
}

// Candidates in order: the runtime package installed next to ours
// (site-packages/hipdnn_ep_runtime), then the loader's own search.
std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  std::string plugin_dir = PluginDirectory();
  if (!plugin_dir.empty()) {
    fs::path pkg = fs::path(plugin_dir).parent_path() / "hipdnn_ep_runtime";
    for (const char* name : {HIPDNN_EP_RUNTIME_SONAME, "libhipdnn_ep_runtime.so"}) {
      for (const fs::path& dir : {pkg, pkg / "lib"}) {
        if (fs::exists(dir / name)) out.push_back((dir / name).string());
      }
    }
  }
  out.push_back(HIPDNN_EP_RUNTIME_SONAME);
  return out;
}

}  // namespace

std::shared_ptr<RuntimeApi> RuntimeApi::Load(const std::string& library_path) {
  std::vector<std::string> candidates =
      library_path.empty() ? Candidates() : std::vector<std::string>{library_path};
  void* handle = nullptr;
  std::string tried;
  for (const std::string& c : candidates) {
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      tried = c;
      break;
    }
    const char* err = dlerror();
    tried += "\n  " + c + ": " + (err ? err : "not found");
  }
  if (handle == nullptr) {
    throw EpError("hipdnn-ep: cannot load the hipdnn-ep runtime library (ABI " +
                  VersionString(HIPDNN_EP_ABI_VERSION) + " needed); tried:" + tried +
                  "\nInstall the matching wheel: pip install 'hipdnn-ep-runtime>=" +
                  std::to_string(HIPDNN_EP_ABI_MAJOR) + "." + std::to_string(HIPDNN_EP_ABI_MINOR) + ",<" +
                  std::to_string(HIPDNN_EP_ABI_MAJOR + 1) + "'");
  }
  std::shared_ptr<RuntimeApi> api(new RuntimeApi());
  api->handle_ = handle;
  api->path_ = tried;

  std::string missing;
#define HIPDNN_EP_RESOLVE(name)                                                \
  api->name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));       \
  if (api->name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name;
  HIPDNN_EP_RUNTIME_FUNCTIONS(HIPDNN_EP_RESOLVE)
#undef HIPDNN_EP_RESOLVE

  uint32_t have = api->hipdnn_ep_abi_version ? api->hipdnn_ep_abi_version() : 0;
  api->abi_version_ = have;
  const uint32_t need = HIPDNN_EP_ABI_VERSION;
  std::string problem;
  if (api->hipdnn_ep_abi_version == nullptr) {
    problem = "it does not export hipdnn_ep_abi_version";
  } else if ((have >> 16) != (need >> 16)) {
    problem = "its ABI major differs";
  } else if ((have & 0xffff) < (need & 0xffff)) {
    problem = "its ABI minor is older than needed";
  }
  if (!missing.empty()) {
    problem += std::string(problem.empty() ? "" : "; ") + "missing functions: [" + missing + "]";
  }
  if (!problem.empty()) {
    // A runtime of the needed ABI that lacks functions is a broken install, not the wrong version.
    const bool right_version = api->hipdnn_ep_abi_version != nullptr && (have >> 16) == (need >> 16) &&
                               (have & 0xffff) >= (need & 0xffff);
    const std::string pin = "'hipdnn-ep-runtime>=" + VersionString(need) + ",<" + std::to_string((need >> 16) + 1) + "'";
    throw EpError("hipdnn-ep: the runtime at " + api->path_ + " has ABI " + VersionString(have) +
                  ", this EP needs ABI " + VersionString(need) + " (same major, minor >= " +
                  std::to_string(need & 0xffff) + "): " + problem + ". Fix: pip install " +
                  (right_version ? "--force-reinstall " : "") + pin);
  }
  return api;
}

RuntimeApi::~RuntimeApi() {
  // The library stays loaded: artifacts and states may outlive this object
  // during process teardown, and unloading a runtime is never needed.
}

std::string RuntimeApi::Error(const char* what, int32_t rc) const {
  const char* msg = hipdnn_ep_last_error ? hipdnn_ep_last_error() : nullptr;
  return std::string("hipdnn-ep: ") + what + " failed (status " + std::to_string(rc) + ")" +
         (msg && *msg ? std::string(": ") + msg : std::string());
}

void RuntimeApi::Check(const char* what, int32_t rc) const {
  if (rc != HIPDNN_EP_STATUS_OK) throw EpError(Error(what, rc));
}

}  // namespace hipdnn_ep
