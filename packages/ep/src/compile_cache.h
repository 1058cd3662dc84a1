// On-disk cache of compiled artifacts.
//
// An entry is the directory <cache_dir>/<key>/ with artifact/ (the
// compiler's output folder, holding one .so) and entry.json; the key is the SHA-256 of everything that determines the
// artifact: the subgraph (model and weight bytes), the compiler's name and
// version, the runtime ABI the code targets, the backend and the protocol
// version.  A change of any of them gives another key, so a stale entry is
// never found; entry.json repeats the inputs and is compared on every hit.
// Entries are built in a private temporary directory and published with one
// rename(2), so two processes compiling the same model at once both succeed
// and readers never see half an entry.
#pragma once

#include <functional>
#include <string>

namespace hipdnn_ep {

struct CacheKey {
  std::string graph_hash;
  std::string compiler;  // "name version"
  std::string abi;       // the runtime's ABI, "MAJOR.MINOR"
  std::string target_abi;  // the ABI the code is compiled for (<= abi)
  std::string backend;
  std::string Digest() const;
  std::string Describe() const;  // the JSON stored as entry.json
};

class CompileCache {
 public:
  // `dir` empty: the default location (DefaultCacheDir()).
  explicit CompileCache(std::string dir);

  const std::string& dir() const { return dir_; }

  // Path of the cached artifact for `key`, or "" on a miss.
  std::string Lookup(const CacheKey& key) const;

  // Builds the entry: `build(tmp_dir)` must leave the artifact at the path it
  // returns (inside tmp_dir or elsewhere).  Returns the published artifact.
  std::string Insert(const CacheKey& key, const std::function<std::string(const std::string& tmp_dir)>& build);

  // Creates a fresh private directory under the cache dir.
  std::string MakeTempDir(const std::string& stem) const;

 private:
  std::string dir_;
};

// $HIPDNN_EP_CACHE_DIR (absolute), else $XDG_CACHE_HOME/hipdnn-ep, else
// $HOME/.cache/hipdnn-ep.
std::string DefaultCacheDir();

}  // namespace hipdnn_ep
