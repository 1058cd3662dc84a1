#include "ep_context.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "ep_utils.h"
#include "private_files.h"
#include "sha256.h"

namespace hipdnn_ep {

namespace {
constexpr const char* kPrefix = "hipdnn-ep;";
constexpr const char* kTagPrefix = "hmac-sha256:";
}

std::string MakeCompatibilityInfo(uint32_t abi_version, const std::string& backend, const std::string& compiler) {
  return std::string(kPrefix) + "abi=" + std::to_string(abi_version >> 16) + "." +
         std::to_string(abi_version & 0xffff) + ";backend=" + backend + ";compiler=" + compiler;
}

OrtCompiledModelCompatibility CompatibilityVerdict(const std::string& info, uint32_t runtime_abi_version) {
  if (info.rfind(kPrefix, 0) != 0) return OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
  size_t at = info.find("abi=");
  if (at == std::string::npos) return OrtCompiledModelCompatibility_EP_UNSUPPORTED;
  unsigned major = 0, minor = 0;
  if (sscanf(info.c_str() + at, "abi=%u.%u", &major, &minor) != 2) return OrtCompiledModelCompatibility_EP_UNSUPPORTED;
  unsigned have_major = runtime_abi_version >> 16, have_minor = runtime_abi_version & 0xffff;
  if (major != have_major || minor > have_minor) return OrtCompiledModelCompatibility_EP_UNSUPPORTED;
  if (minor < have_minor) return OrtCompiledModelCompatibility_EP_SUPPORTED_PREFER_RECOMPILATION;
  return OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL;
}

std::string InstallKey(const PrivateDir& cache_dir) {
  constexpr const char* kName = "install.key";
  const std::string path = (std::filesystem::path(cache_dir.path()) / kName).string();
  if (!cache_dir.Exists(kName)) {
    // 32 random bytes, as hex.  Published whole with linkat(2): when two
    // processes race, the first key wins and both read it, never half of it.
    static const char* hex = "0123456789abcdef";
    std::string fresh;
    for (unsigned char c : RandomBytes(32)) {
      fresh += hex[c >> 4];
      fresh += hex[c & 0xf];
    }
    cache_dir.PublishNew(kName, fresh, 0600);
  }
  // The key is 64 hex digits; a larger file is damaged, and is not read.
  std::string key = cache_dir.Read(kName, "install key", 4096, FileOwner::kMeOnly);
  const bool valid = key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
                       return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                     });
  if (!valid) {
    throw EpError("hipdnn-ep: the install key " + path + " is damaged; delete it (a new one is made, and "
                  "EPContext models compiled with the old one must be compiled again or trusted)");
  }
  return key;
}

std::string SignArtifact(const std::string& key, const std::string& artifact_bytes) {
  return kTagPrefix + HmacSha256Hex(key, artifact_bytes);
}

bool VerifyArtifactTag(const std::string& key, const std::string& artifact_bytes, const std::string& tag) {
  return ConstantTimeEqual(tag, SignArtifact(key, artifact_bytes));
}

}  // namespace hipdnn_ep
