// Folders and files that only the current user may write: the compile cache
// and the per-install key that authenticates native code.
//
// Whoever can write the compile cache decides which code the EP loads, so the
// cache folder must be private: created with mode 0700, and an existing one is
// refused when another user owns it or when its group or others may write it.
//
// A path is checked only at the moment it is resolved: another user who may
// write an ancestor folder can rename the cache and put a symbolic link in its
// place afterwards.  So the cache is opened once (PrivateDir) and every later
// access is relative to that descriptor (openat, mkdirat, renameat, linkat,
// unlinkat), never following a symbolic link; renaming or replacing the path
// then redirects nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ep_utils.h"

namespace hipdnn_ep {

// The largest artifact (program.so) the EP reads into memory: far above any
// compiled program, far below what would exhaust memory.  Checked with fstat
// before reading, so a sparse or endless file costs nothing.
constexpr uint64_t kMaxArtifactBytes = uint64_t{1} << 30;  // 1 GiB

// Thrown by ReadRegularFile and PrivateDir::Read when the file (or a folder
// on its way) does not exist.
struct FileMissing : EpError {
  using EpError::EpError;
};

// Who must own a file before it is read.
enum class FileOwner {
  kAnyone,  // a file the user handed over (an EPContext artifact): verified after reading
  kMe,      // a file in the private cache: owned by the effective user
  kMeOnly,  // a secret: owned by the effective user, no access for group or others
};

// Reads the regular file `name` relative to the folder descriptor `dir_fd`
// (AT_FDCWD: relative to the working folder, or an absolute path), opened
// without following a symbolic link in its last component and without
// blocking (a FIFO or device is refused, never waited on).  Refuses, with a
// message naming `what` and `shown` (the path for messages), a file that is
// not regular, larger than `max_bytes`, or not owned as `owner` requires.
// Throws FileMissing when it does not exist.
std::string ReadRegularFile(int dir_fd, const std::string& name, const std::string& shown, const std::string& what,
                            uint64_t max_bytes, FileOwner owner);

// Writes all of `bytes` to `fd`, retrying short writes and EINTR; false on any error.
bool WriteAll(int fd, const std::string& bytes);

// `size` bytes from the kernel's random generator (getrandom(2)).
std::string RandomBytes(size_t size);

// An opened folder that only the effective user may write, and the files in
// it, reached through its descriptor only.  Names passed to its methods are
// single components ("entry.json"), except where a method says otherwise.
class PrivateDir {
 public:
  // Opens the folder `path` (an absolute path), creating missing parents and
  // the folder itself (mode 0700).  Refuses, with a message saying how to fix
  // it, a last component that is a symbolic link or not a folder, a folder
  // owned by another user than the effective one, or one its group or others
  // may write.  `what` names it in messages ("compile cache").
  static PrivateDir Open(const std::string& path, const std::string& what);

  PrivateDir() = default;
  PrivateDir(PrivateDir&& other) noexcept;
  PrivateDir& operator=(PrivateDir&& other) noexcept;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  // The path it was opened as: for messages only, never for access.
  const std::string& path() const { return path_; }
  // A path that the kernel resolves through this descriptor
  // (/proc/<pid>/fd/<n>), for another process of this user (the compiler) to
  // reach exactly this folder; the plain path where /proc cannot serve it.
  std::string PathForChild() const;

  // The subfolder `name`, created (mode 0700) when missing and `create`;
  // checked like Open.  Returns a closed PrivateDir when it is missing and
  // not `create`.
  PrivateDir Sub(const std::string& name, bool create) const;
  // A new subfolder "<stem>-<random>" (mode 0700); its name in *name.
  PrivateDir MakeTemp(const std::string& stem, std::string* name) const;

  // Reads the file at `relative` ("a/b/file": every folder on the way is
  // opened without following symbolic links).  Throws FileMissing when it or
  // a folder on the way does not exist.
  std::string Read(const std::string& relative, const std::string& what, uint64_t max_bytes,
                   FileOwner owner = FileOwner::kMe) const;
  // True when `name` exists (of any type; a symbolic link is not followed).
  bool Exists(const std::string& name) const;
  // Creates the new file `name` (never replacing one, never through a link).
  void WriteNew(const std::string& name, const std::string& content, unsigned mode = 0600) const;
  // Publishes `content` as `name` if no file exists there yet, atomically: it
  // is written to a temporary file in this folder and linked into place with
  // linkat(2), so a reader sees either no file or the whole content.  Returns
  // false when another process published `name` first.
  bool PublishNew(const std::string& name, const std::string& content, unsigned mode) const;
  // renameat(2) of `name` here to `to_name` in `to`; false (errno set) when it fails.
  bool MoveTo(const std::string& name, const PrivateDir& to, const std::string& to_name) const;
  // Removes `name` and, for a folder, everything in it, never following a
  // symbolic link (a link is removed, not what it points to).  Best effort.
  void RemoveTree(const std::string& name) const;
  // The names in this folder (not "." and "..").
  std::vector<std::string> List() const;

 private:
  PrivateDir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};


// A fresh private (0700) directory `<parent>/<stem>-XXXXXX`; `parent` must exist.
// (For folders outside the cache: the artifact copy where memfd is unavailable.)
std::string MakePrivateTempDir(const std::string& parent, const std::string& stem);

// `<system temp dir>/<stem>-<effective uid>`: the per-user fallback location.
std::string PerUserTempDir(const std::string& stem);

// "" when every existing folder above `path` belongs to the effective user or
// to root; otherwise says which one belongs to whom (another user who owns a
// folder above the cache can rename the cache and put his own in its place
// before it is opened).
std::string ForeignAncestor(const std::string& path);

}  // namespace hipdnn_ep
