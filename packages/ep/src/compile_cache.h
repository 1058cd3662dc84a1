// On-disk cache of compiled artifacts.
//
// An entry is the directory <cache_dir>/<key>/ with artifact/program.so and
// entry.json; the key is the SHA-256 of everything that determines the
// artifact: the subgraph (model and weight bytes), the compiler's name,
// version and build id (a digest of its sources), the runtime ABI the code targets, the backend and the entry
// format.  A change of any of them gives another key, so a stale entry is
// never found; entry.json repeats the inputs and holds an HMAC-SHA256, under
// the per-install key, over them and the code.  A hit is verified over the
// bytes read from the opened file before anything loads them (see
// verified_artifact.h); an entry that does not verify is evicted and built
// again.  Entries are built in a private temporary directory and published
// with one rename(2), so two processes compiling the same model at once both
// succeed and readers never see half an entry.  After an insert the least
// recently used entries are evicted until the cache fits its size bound.
//
// The cache directory must be private to the user (private_files.h): whoever
// can write it decides which code the EP runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "verified_artifact.h"

namespace hipdnn_ep {

struct CacheKey {
  std::string graph_hash;
  std::string compiler;  // "name version"
  std::string compiler_build;  // the compiler's build id (its content)
  std::string abi;       // the runtime's ABI, "MAJOR.MINOR"
  std::string target_abi;  // the ABI the code is compiled for (<= abi)
  std::string backend;
  std::string Digest() const;
  std::string Describe() const;  // the inputs as JSON, repeated in entry.json
};

class CompileCache {
 public:
  // `dir` empty: the default location (DefaultCacheDir()).  Creates the
  // directory (mode 0700) or refuses one other users could write.
  // `max_bytes`: size bound of all entries (0: none).
  CompileCache(std::string dir, uint64_t max_bytes);

  const std::string& dir() const { return dir_; }

  // The verified artifact for `key`, or null on a miss.  An entry that is
  // damaged or does not verify is evicted (a miss), with the reason in
  // *problem.
  std::unique_ptr<LoadedArtifact> Lookup(const CacheKey& key, std::string* problem = nullptr);

  // Builds the entry: `build(tmp_dir)` must leave the artifact at the path it
  // returns.  Publishes it, trims the cache to its bound and returns the
  // artifact (loaded from the bytes that were published).
  std::unique_ptr<LoadedArtifact> Insert(const CacheKey& key,
                                         const std::function<std::string(const std::string& tmp_dir)>& build);

  // Removes the entry of `key`, if any (atomically for readers).
  void Evict(const CacheKey& key);

  // Creates a fresh private directory under the cache dir.
  std::string MakeTempDir(const std::string& stem) const;

 private:
  void EvictDigest(const std::string& digest);
  // Evicts least recently used entries (never `keep`) until the bound holds.
  void Trim(const std::string& keep);
  const std::string& Key();  // the per-install key, read on first use

  std::string dir_;
  uint64_t max_bytes_;
  std::string key_;
};

// $HIPDNN_EP_CACHE_DIR (absolute), else $XDG_CACHE_HOME/hipdnn-ep, else
// $HOME/.cache/hipdnn-ep, else <temp dir>/hipdnn-ep-cache-<uid>.
std::string DefaultCacheDir();

}  // namespace hipdnn_ep
