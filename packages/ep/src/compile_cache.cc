#include "compile_cache.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ep_utils.h"
#include "json.h"
#include "sha256.h"

namespace hipdnn_ep {
namespace fs = std::filesystem;

namespace {
constexpr const char* kArtifactDir = "artifact";
constexpr const char* kEntryName = "entry.json";

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The one shared object in an entry's artifact folder ("" if not exactly one).
std::string SingleSharedObject(const fs::path& dir) {
  std::error_code ec;
  std::string found;
  int count = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".so") {
      found = e.path().string();
      ++count;
    }
  }
  return count == 1 ? found : std::string();
}
}  // namespace

std::string DefaultCacheDir() {
  // The one environment variable of the EP (for CI and demos that cannot
  // pass session options); the option cache_dir still wins.
  const char* env = getenv("HIPDNN_EP_CACHE_DIR");
  if (env && *env) {
    if (!fs::path(env).is_absolute()) {
      throw EpError(std::string("hipdnn-ep: HIPDNN_EP_CACHE_DIR must be an absolute path, got '") + env + "'",
                    ORT_INVALID_ARGUMENT);
    }
    return env;
  }
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (fs::path(xdg) / "hipdnn-ep").string();
  const char* home = getenv("HOME");
  if (home && *home) return (fs::path(home) / ".cache" / "hipdnn-ep").string();
  return (fs::temp_directory_path() / "hipdnn-ep-cache").string();
}

std::string CacheKey::Describe() const {
  return "{\"format\":1,\"graph_hash\":" + json::Quote(graph_hash) + ",\"compiler\":" + json::Quote(compiler) +
         ",\"abi\":" + json::Quote(abi) +
         ",\"target_abi\":" + json::Quote(target_abi) + ",\"backend\":" + json::Quote(backend) + "}";
}

std::string CacheKey::Digest() const { return Sha256Hex(Describe()); }

CompileCache::CompileCache(std::string dir)
    : dir_(fs::absolute(dir.empty() ? DefaultCacheDir() : std::move(dir)).string()) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw EpError("hipdnn-ep: cannot create the compile cache directory " + dir_ + ": " + ec.message());
}

std::string CompileCache::Lookup(const CacheKey& key) const {
  fs::path entry = fs::path(dir_) / key.Digest();
  std::error_code ec;
  if (!fs::is_directory(entry / kArtifactDir, ec) || !fs::is_regular_file(entry / kEntryName, ec)) return {};
  // The digest already encodes the inputs; comparing them guards against a
  // damaged or hand-edited entry.
  if (ReadFile(entry / kEntryName) != key.Describe()) return {};
  return SingleSharedObject(entry / kArtifactDir);
}

std::string CompileCache::MakeTempDir(const std::string& stem) const {
  std::string templ = (fs::path(dir_) / (".tmp-" + stem + "-XXXXXX")).string();
  if (mkdtemp(templ.data()) == nullptr) {
    throw EpError("hipdnn-ep: cannot create a temporary directory in " + dir_ + ": " + std::strerror(errno));
  }
  return templ;
}

std::string CompileCache::Insert(const CacheKey& key,
                                 const std::function<std::string(const std::string& tmp_dir)>& build) {
  const std::string digest = key.Digest();
  const fs::path entry = fs::path(dir_) / digest;
  const fs::path tmp = MakeTempDir(digest.substr(0, 16));
  try {
    fs::path built = build(tmp.string());
    fs::path staged = fs::path(tmp) / "entry";
    fs::create_directory(staged);
    // The whole folder of the artifact is kept: the compiler may put files
    // beside the shared object.
    fs::copy(built.parent_path(), staged / kArtifactDir, fs::copy_options::recursive);
    std::ofstream(staged / kEntryName, std::ios::binary) << key.Describe();
    // rename(2) of a directory fails if the target exists and is not empty:
    // then another process published the same entry first, and we use it;
    // a damaged entry in the way is moved aside and replaced.
    if (std::rename(staged.c_str(), entry.c_str()) != 0 && Lookup(key).empty()) {
      fs::path aside = tmp / "damaged";
      std::rename(entry.c_str(), aside.c_str());
      std::rename(staged.c_str(), entry.c_str());
    }
    {
      int err = errno;
      std::string found = Lookup(key);
      if (found.empty()) {
        throw EpError("hipdnn-ep: cannot publish the compile cache entry " + entry.string() + ": " +
                      std::strerror(err));
      }
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  std::string found = Lookup(key);
  if (found.empty()) throw EpError("hipdnn-ep: the compile cache entry " + entry.string() + " vanished");
  return found;
}

}  // namespace hipdnn_ep
