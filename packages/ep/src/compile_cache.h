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
// can write it decides which code the EP runs.  It is opened once, and every
// access goes through that descriptor (never following a symbolic link): a
// user who may write a folder above it can rename it or put a link in its
// place, but cannot redirect a cache already open.  The compiler writes into
// a temporary folder the EP created and reaches it through the EP's
// descriptor (PrivateDir::PathForChild); its output is read back through that
// descriptor and must be a regular file of this user.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "private_files.h"
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

// Where the cache lives: the folder, and a warning for the log when the
// default location had to be replaced.
struct CacheLocation {
  std::string dir;
  std::string warning;
};

// `option`: the EP option cache_dir ("" when not given).  Named explicitly
// (the option or $HIPDNN_EP_CACHE_DIR), a folder below one that another user
// (not root) owns is refused; the default location in such a place ($HOME of
// another user, as with `sudo -E`) is replaced by the per-user folder in the
// temporary directory, with a warning.
CacheLocation ResolveCacheDir(const std::string& option);

class CompileCache {
 public:
  // `dir` empty: the default location (ResolveCacheDir).  Creates the
  // directory (mode 0700) or refuses one other users could write, and keeps
  // it open.  `max_bytes`: size bound of all entries (0: none).
  CompileCache(std::string dir, uint64_t max_bytes);

  const std::string& dir() const { return dir_.path(); }
  const PrivateDir& folder() const { return dir_; }
  // Why the default location was replaced ("" when it was not).
  const std::string& warning() const { return warning_; }

  // The verified artifact for `key`, or null on a miss.  An entry that is
  // damaged or does not verify is evicted (a miss), with the reason in
  // *problem.
  std::unique_ptr<LoadedArtifact> Lookup(const CacheKey& key, std::string* problem = nullptr);

  // Builds the entry: `build(tmp)` must leave the artifact in the folder
  // `tmp` and return its path relative to `tmp`; it is read through `tmp`'s
  // descriptor.  Publishes it, trims the cache to its bound and returns the
  // artifact (loaded from the bytes that were published).
  std::unique_ptr<LoadedArtifact> Insert(const CacheKey& key,
                                         const std::function<std::string(const PrivateDir& tmp)>& build);

  // Removes the entry of `key`, if any (atomically for readers).
  void Evict(const CacheKey& key);

  // Creates a fresh private directory under the cache dir; its name in *name.
  PrivateDir MakeTempDir(const std::string& stem, std::string* name) const;
  // Removes the folder `name` of the cache (one made by MakeTempDir).
  void Remove(const std::string& name) const { dir_.RemoveTree(name); }

 private:
  void EvictDigest(const std::string& digest);
  // Evicts least recently used entries (never `keep`) until the bound holds.
  void Trim(const std::string& keep);
  const std::string& Key();  // the per-install key, read on first use

  PrivateDir dir_;
  std::string warning_;
  uint64_t max_bytes_;
  std::string key_;
};

// Reads the artifact `relative` of the folder `tmp` that a compiler wrote:
// a regular file of this user, within the artifact size bound.
std::unique_ptr<LoadedArtifact> ReadCompilerOutput(const PrivateDir& tmp, const std::string& relative);

}  // namespace hipdnn_ep
