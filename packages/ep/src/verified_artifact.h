// Native code loaded only from bytes that were verified after opening them.
//
// The bytes of an artifact are read once, from one descriptor (or taken from
// an EPContext model), checked by the caller, and copied into a sealed
// memfd; the runtime then opens /proc/self/fd/N, which nobody can change any
// more.  So there is no window between the check and dlopen in which a file
// could be replaced.  Where memfd is unavailable the verified bytes go to a
// fresh file in a private (0700) folder of this process instead.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace hipdnn_ep {

class LoadedArtifact {
 public:
  // Reads the regular file `path` (not through a symbolic link in its last
  // component, not blocking on a FIFO, at most kMaxArtifactBytes), passes its bytes to `verify` (which throws to refuse them)
  // and seals the verified bytes.
  static std::unique_ptr<LoadedArtifact> FromFile(const std::string& path,
                                                  const std::function<void(const std::string& bytes)>& verify);
  // Seals bytes the caller has verified; `origin` names them in messages.
  static std::unique_ptr<LoadedArtifact> FromBytes(const std::string& bytes, const std::string& origin);

  ~LoadedArtifact();
  LoadedArtifact(const LoadedArtifact&) = delete;
  LoadedArtifact& operator=(const LoadedArtifact&) = delete;

  // What the runtime opens (/proc/self/fd/N or the private copy).  Valid while
  // this object lives; keep it alive as long as the code is loaded.
  const std::string& path() const { return path_; }
  // Where the bytes came from, for messages.
  const std::string& origin() const { return origin_; }
  // The verified bytes.
  const std::string& bytes() const { return bytes_; }

 private:
  LoadedArtifact() = default;
  std::string path_;
  std::string origin_;
  std::string bytes_;
  int fd_ = -1;
  std::string private_dir_;  // the fallback copy's folder, removed with it
};

}  // namespace hipdnn_ep
