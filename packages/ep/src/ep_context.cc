#include "ep_context.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "ep_utils.h"
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

std::string InstallKey(const std::string& cache_dir) {
  namespace fs = std::filesystem;
  fs::path path = fs::path(cache_dir) / "install.key";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string key = ss.str();
  if (key.size() == 64) return key;
  std::random_device rd;
  std::string fresh;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 64; ++i) fresh += hex[rd() & 0xf];
  // O_EXCL: when two processes race, the first key wins and both read it.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) {
    bool ok = write(fd, fresh.data(), fresh.size()) == static_cast<ssize_t>(fresh.size());
    close(fd);
    if (!ok) throw EpError("hipdnn-ep: cannot write the install key " + path.string());
    return fresh;
  }
  std::ifstream again(path, std::ios::binary);
  std::stringstream ss2;
  ss2 << again.rdbuf();
  key = ss2.str();
  if (key.size() != 64) throw EpError("hipdnn-ep: the install key " + path.string() + " is damaged; delete it");
  return key;
}

std::string SignArtifact(const std::string& key, const std::string& artifact_bytes) {
  return kTagPrefix + HmacSha256Hex(key, artifact_bytes);
}

bool VerifyArtifactTag(const std::string& key, const std::string& artifact_bytes, const std::string& tag) {
  return ConstantTimeEqual(tag, SignArtifact(key, artifact_bytes));
}

}  // namespace hipdnn_ep
