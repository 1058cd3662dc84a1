#include "compile_cache.h"

#include <dirent.h>
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

// $HIPDNN_EP_CACHE_DIR (absolute; *named = true), else
// $XDG_CACHE_HOME/hipdnn-ep, else $HOME/.cache/hipdnn-ep, else "".
std::string ConfiguredCacheDir(bool* named) {
  // The one environment variable of the EP (for CI and demos that cannot
  // pass session options); the option cache_dir still wins.
  const char* env = getenv("HIPDNN_EP_CACHE_DIR");
  *named = env && *env;
  if (*named) {
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
  return {};
}
}  // namespace

CacheLocation ResolveCacheDir(const std::string& option) {
  bool named = !option.empty();
  std::string dir = named ? option : ConfiguredCacheDir(&named);
  // Per user, never a shared folder: a folder other users can create first
  // would be refused (or, worse, trusted).
  if (dir.empty()) return {PerUserTempDir("hipdnn-ep-cache"), ""};
  dir = fs::absolute(dir).lexically_normal().string();
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string foreign = ForeignAncestor(dir);
  if (foreign.empty()) return {dir, ""};
  if (named) {
    throw EpError("hipdnn-ep: refusing the compile cache folder " + dir + ": the folder " + foreign +
                  ", not to this process's user id " + std::to_string(geteuid()) + " (or root); that user could "
                  "replace the cache and decide which native code this process runs. Choose a folder of your "
                  "own with the EP option cache_dir or HIPDNN_EP_CACHE_DIR");
  }
  const std::string instead = PerUserTempDir("hipdnn-ep-cache");
  return {instead, "hipdnn-ep: not using the default compile cache " + dir + ": the folder " + foreign +
                       ", not to this process's user id " + std::to_string(geteuid()) + " (HOME of another user, "
                       "as with 'sudo -E'?); using " + instead + " instead. Set the EP option cache_dir to a "
                       "folder of your own to choose another"};
}

std::string CacheKey::Describe() const {
  return json::Dump(KeyJson(*this), "a compile cache key");
}

std::string CacheKey::Digest() const { return Sha256Hex(Describe()); }

CompileCache::CompileCache(std::string dir, uint64_t max_bytes) : max_bytes_(max_bytes) {
  CacheLocation where = ResolveCacheDir(dir);
  dir_ = PrivateDir::Open(where.dir, "compile cache");
  warning_ = std::move(where.warning);
}

const std::string& CompileCache::Key() {
  if (key_.empty()) key_ = InstallKey(dir_);
  return key_;
}

std::unique_ptr<LoadedArtifact> CompileCache::Lookup(const CacheKey& key, std::string* problem) {
  const std::string digest = key.Digest();
  if (!dir_.Exists(digest)) return nullptr;
  const std::string described = key.Describe();
  const std::string shown = (fs::path(dir_.path()) / digest).string();
  std::string why;
  std::unique_ptr<LoadedArtifact> loaded;
  PrivateDir entry;
  try {
    entry = dir_.Sub(digest, false);
    if (!entry.is_open()) return nullptr;  // evicted meanwhile
    const std::string text = entry.Read(kEntryName, "compile cache entry", json::kMaxEntryBytes);
    const json::Json meta = json::Parse(text, json::kMaxEntryBytes, (fs::path(shown) / kEntryName).string());
    const std::string mac = json::String(json::Member(meta, "mac"));
    if (!json::Member(meta, "mac").is_string() || text != EntryJson(key, mac)) {
      why = "its entry.json does not describe this compile";
    } else {
      const std::string program = std::string(kArtifactDir) + "/" + kProgramName;
      const std::string code = entry.Read(program, "cached artifact", kMaxArtifactBytes);
      if (!ConstantTimeEqual(mac, EntryMac(Key(), described, code))) {
        why = "its code does not match the MAC recorded when it was compiled";
      } else {
        loaded = LoadedArtifact::FromBytes(code, (fs::path(shown) / program).string());
      }
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!loaded) {
    if (problem) *problem = "compile cache entry " + shown + " is damaged (" + why + "); evicted it";
    EvictDigest(digest);
    return nullptr;
  }
  // The entry's last use, for the size bound's LRU order.
  utimensat(entry.fd(), kEntryName, nullptr, AT_SYMLINK_NOFOLLOW);
  return loaded;
}

PrivateDir CompileCache::MakeTempDir(const std::string& stem, std::string* name) const {
  return dir_.MakeTemp(".tmp-" + stem, name);
}

void CompileCache::Evict(const CacheKey& key) { EvictDigest(key.Digest()); }

void CompileCache::EvictDigest(const std::string& digest) {
  if (!dir_.Exists(digest)) return;
  // Moved aside first: a reader sees the whole entry or none.
  std::string aside;
  const PrivateDir tmp = MakeTempDir("evicted", &aside);
  dir_.MoveTo(digest, tmp, "entry");  // fails only if another process evicted it first
  dir_.RemoveTree(aside);
}

std::unique_ptr<LoadedArtifact> ReadCompilerOutput(const PrivateDir& tmp, const std::string& relative) {
  // Through the descriptor of the folder we created: whatever happened to the
  // path of the cache meanwhile, these are the bytes the compiler wrote there.
  const std::string code = tmp.Read(relative, "compiler's artifact", kMaxArtifactBytes);
  return LoadedArtifact::FromBytes(code, (fs::path(tmp.path()) / relative).string());
}

std::unique_ptr<LoadedArtifact> CompileCache::Insert(const CacheKey& key,
                                                     const std::function<std::string(const PrivateDir& tmp)>& build) {
  const std::string digest = key.Digest();
  const std::string described = key.Describe();
  std::string tmp_name;
  const PrivateDir tmp = MakeTempDir(digest.substr(0, 16), &tmp_name);
  std::unique_ptr<LoadedArtifact> loaded;
  try {
    // The compiler wrote into our private folder; these bytes are what is
    // published and what this session loads.
    loaded = ReadCompilerOutput(tmp, build(tmp));
    const PrivateDir staged = tmp.Sub("entry", true);
    staged.Sub(kArtifactDir, true).WriteNew(kProgramName, loaded->bytes(), 0644);
    staged.WriteNew(kEntryName, EntryJson(key, EntryMac(Key(), described, loaded->bytes())), 0644);
    // rename(2) of a directory fails if the target exists and is not empty:
    // then another process published the same entry first.  A damaged entry
    // in the way (Lookup evicts it) is replaced.
    if (!tmp.MoveTo("entry", dir_, digest)) {
      int err = errno;
      if (!Lookup(key) && !tmp.MoveTo("entry", dir_, digest)) {
        throw EpError("hipdnn-ep: cannot publish the compile cache entry " +
                      (fs::path(dir_.path()) / digest).string() + ": " + std::strerror(err));
      }
    }
  } catch (...) {
    dir_.RemoveTree(tmp_name);
    throw;
  }
  dir_.RemoveTree(tmp_name);
  Trim(digest);
  return loaded;
}

namespace {
// Bytes of the regular files below the folder `fd` (links not followed).
uint64_t TreeBytes(int fd, int depth = 0) {
  uint64_t total = 0;
  const int own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = own >= 0 ? fdopendir(own) : nullptr;
  if (!d) {
    if (own >= 0) close(own);
    return 0;
  }
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st {};
    if (fstatat(dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode)) total += static_cast<uint64_t>(st.st_size);
    if (S_ISDIR(st.st_mode) && depth < 8) {
      const int sub = openat(dirfd(d), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        total += TreeBytes(sub, depth + 1);
        close(sub);
      }
    }
  }
  closedir(d);
  return total;
}

std::chrono::system_clock::time_point ModifiedAt(const struct stat& st) {
  return std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                               std::chrono::nanoseconds(st.st_mtim.tv_nsec));
}
}  // namespace

void CompileCache::Trim(const std::string& keep) {
  if (max_bytes_ == 0) return;
  struct Entry {
    std::string digest;
    uint64_t bytes = 0;
    std::chrono::system_clock::time_point used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  const auto now = std::chrono::system_clock::now();
  for (const std::string& name : dir_.List()) {
    struct stat st {};
    if (fstatat(dir_.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (name.rfind(".tmp-", 0) == 0) {
      // Left behind by a process that died while compiling: no compile takes a day.
      if (now - ModifiedAt(st) > std::chrono::hours(24)) dir_.RemoveTree(name);
      continue;
    }
    if (!IsDigest(name) || !S_ISDIR(st.st_mode)) continue;
    const int fd = openat(dir_.fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    Entry item{name, TreeBytes(fd), ModifiedAt(st)};
    struct stat meta {};
    if (fstatat(fd, kEntryName, &meta, AT_SYMLINK_NOFOLLOW) == 0) item.used = ModifiedAt(meta);
    close(fd);
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
