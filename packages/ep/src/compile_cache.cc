#include "compile_cache.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <hipdnn_ep/runtime_abi.h>

#include "ep_context.h"
#include "ep_utils.h"
#include "json.h"
#include "private_files.h"
#include "sha256.h"

namespace hipdnn_ep {
namespace fs = std::filesystem;

namespace {
constexpr int kFormat = 2;
constexpr const char* kArtifactDir = "artifact";
constexpr const char* kProgramName = HIPDNN_EP_ARTIFACT_FILE;  // the artifact folder's file (manifest)
constexpr const char* kEntryName = "entry.json";

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// MAC of an entry: binds the code to the inputs it was compiled from.
std::string EntryMac(const std::string& install_key, const std::string& described, const std::string& code) {
  return SignArtifact(install_key, described + std::string(1, '\0') + code);
}

// The inputs of a key, in a fixed member order: its text is hashed and compared.
json::OrderedJson KeyJson(const CacheKey& key) {
  json::OrderedJson j;
  j["format"] = kFormat;
  j["graph_hash"] = key.graph_hash;
  j["compiler"] = key.compiler;
  j["compiler_build"] = key.compiler_build;
  j["abi"] = key.abi;
  j["target_abi"] = key.target_abi;
  j["backend"] = key.backend;
  return j;
}

// entry.json: the described inputs with the MAC added.
std::string EntryJson(const CacheKey& key, const std::string& mac) {
  json::OrderedJson j = KeyJson(key);
  j["mac"] = mac;
  return json::Dump(j, "a compile cache entry");
}

bool IsDigest(const std::string& name) {
  return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
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
  // Per user, never a shared folder: a folder other users can create first
  // would be refused (or, worse, trusted).
  return PerUserTempDir("hipdnn-ep-cache");
}

std::string CacheKey::Describe() const {
  return json::Dump(KeyJson(*this), "a compile cache key");
}

std::string CacheKey::Digest() const { return Sha256Hex(Describe()); }

CompileCache::CompileCache(std::string dir, uint64_t max_bytes)
    : dir_(fs::absolute(dir.empty() ? DefaultCacheDir() : std::move(dir)).string()), max_bytes_(max_bytes) {
  EnsurePrivateDir(dir_, "compile cache");
}

const std::string& CompileCache::Key() {
  if (key_.empty()) key_ = InstallKey(dir_);
  return key_;
}

std::unique_ptr<LoadedArtifact> CompileCache::Lookup(const CacheKey& key, std::string* problem) {
  const std::string digest = key.Digest();
  const fs::path entry = fs::path(dir_) / digest;
  std::error_code ec;
  if (!fs::exists(entry, ec)) return nullptr;
  const std::string described = key.Describe();
  std::string why;
  std::unique_ptr<LoadedArtifact> loaded;
  try {
    const std::string text = ReadFile(entry / kEntryName);
    const json::Json meta = json::Parse(text, json::kMaxEntryBytes, (entry / kEntryName).string());
    const std::string mac = json::String(json::Member(meta, "mac"));
    if (!json::Member(meta, "mac").is_string() || text != EntryJson(key, mac)) {
      why = "its entry.json does not describe this compile";
    } else {
      loaded = LoadedArtifact::FromFile((entry / kArtifactDir / kProgramName).string(), [&](const std::string& code) {
        if (!ConstantTimeEqual(mac, EntryMac(Key(), described, code))) {
          throw EpError("its code does not match the MAC recorded when it was compiled");
        }
      });
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!loaded) {
    if (problem) *problem = "compile cache entry " + entry.string() + " is damaged (" + why + "); evicted it";
    EvictDigest(digest);
    return nullptr;
  }
  // The entry's last use, for the size bound's LRU order.
  utimensat(AT_FDCWD, (entry / kEntryName).c_str(), nullptr, 0);
  return loaded;
}

std::string CompileCache::MakeTempDir(const std::string& stem) const {
  return MakePrivateTempDir(dir_, ".tmp-" + stem);
}

void CompileCache::Evict(const CacheKey& key) { EvictDigest(key.Digest()); }

void CompileCache::EvictDigest(const std::string& digest) {
  const fs::path entry = fs::path(dir_) / digest;
  std::error_code ec;
  if (!fs::exists(entry, ec)) return;
  // Moved aside first: a reader sees the whole entry or none.
  const fs::path aside = fs::path(MakeTempDir("evicted")) / "entry";
  std::rename(entry.c_str(), aside.c_str());  // fails only if another process evicted it first
  fs::remove_all(aside.parent_path(), ec);
}

std::unique_ptr<LoadedArtifact> CompileCache::Insert(
    const CacheKey& key, const std::function<std::string(const std::string& tmp_dir)>& build) {
  const std::string digest = key.Digest();
  const std::string described = key.Describe();
  const fs::path entry = fs::path(dir_) / digest;
  const fs::path tmp = MakeTempDir(digest.substr(0, 16));
  std::unique_ptr<LoadedArtifact> loaded;
  try {
    // The compiler wrote into our private folder; these bytes are what is
    // published and what this session loads.
    loaded = LoadedArtifact::FromFile(build(tmp.string()), [](const std::string&) {});
    const fs::path staged = tmp / "entry";
    fs::create_directories(staged / kArtifactDir);
    {
      std::ofstream so(staged / kArtifactDir / kProgramName, std::ios::binary);
      so << loaded->bytes();
      std::ofstream meta(staged / kEntryName, std::ios::binary);
      meta << EntryJson(key, EntryMac(Key(), described, loaded->bytes()));
      if (!so.flush() || !meta.flush()) {
        throw EpError("hipdnn-ep: cannot write the compile cache entry in " + staged.string());
      }
    }
    // rename(2) of a directory fails if the target exists and is not empty:
    // then another process published the same entry first.  A damaged entry
    // in the way (Lookup evicts it) is replaced.
    if (std::rename(staged.c_str(), entry.c_str()) != 0) {
      int err = errno;
      if (!Lookup(key) && std::rename(staged.c_str(), entry.c_str()) != 0) {
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
  Trim(digest);
  return loaded;
}

void CompileCache::Trim(const std::string& keep) {
  if (max_bytes_ == 0) return;
  struct Entry {
    std::string digest;
    uint64_t bytes = 0;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".tmp-", 0) == 0) {
      // Left behind by a process that died while compiling: no compile takes a day.
      std::error_code age_ec;
      const auto changed = fs::last_write_time(e.path(), age_ec);
      if (!age_ec && now - changed > std::chrono::hours(24)) fs::remove_all(e.path(), age_ec);
      continue;
    }
    if (!IsDigest(name) || !e.is_directory(ec)) continue;
    Entry item{name, 0, fs::last_write_time(e.path(), ec)};
    auto used = fs::last_write_time(e.path() / kEntryName, ec);
    if (!ec) item.used = used;
    for (const auto& f : fs::recursive_directory_iterator(e.path(), ec)) {
      if (f.is_regular_file(ec)) item.bytes += f.file_size(ec);
    }
    total += item.bytes;
    entries.push_back(std::move(item));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (e.digest == keep) continue;
    EvictDigest(e.digest);
    total -= e.bytes;
  }
}

}  // namespace hipdnn_ep
