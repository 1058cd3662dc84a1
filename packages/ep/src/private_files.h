// Folders and files that only the current user may write: the compile cache
// and the per-install key that authenticates native code.
//
// Whoever can write the compile cache decides which code the EP loads, so the
// cache folder must be private: created with mode 0700, and an existing one is
// refused when another user owns it or when its group or others may write it.
#pragma once

#include <string>

namespace hipdnn_ep {

// Creates `dir` (and missing parents) if needed, the last component with mode
// 0700.  Throws a message saying how to fix it when the folder is not a
// directory, is owned by another user than the effective one, or is writable
// by its group or others.  `what` names the folder in messages ("compile
// cache").
void EnsurePrivateDir(const std::string& dir, const std::string& what);

// A fresh private (0700) directory `<parent>/<stem>-XXXXXX`; `parent` must exist.
std::string MakePrivateTempDir(const std::string& parent, const std::string& stem);

// `<system temp dir>/<stem>-<effective uid>`: the per-user fallback location.
std::string PerUserTempDir(const std::string& stem);

// `size` bytes from the kernel's random generator (getrandom(2)).
std::string RandomBytes(size_t size);

// Writes all of `bytes` to `fd`, retrying short writes and EINTR; false on any error.
bool WriteAll(int fd, const std::string& bytes);

// Publishes `content` as `path` if no file exists there yet, atomically: it
// is written to a private temporary file in the same folder and linked into
// place with link(2), so a reader sees either no file or the whole content.
// Returns false when another process published `path` first.
bool PublishNewFile(const std::string& path, const std::string& content, unsigned mode);

// Reads a regular file owned by the effective user that no other user may
// access, without following a symbolic link in the last component; throws a
// message naming `what` when it is missing, foreign, shared or unreadable.
std::string ReadPrivateFile(const std::string& path, const std::string& what);

}  // namespace hipdnn_ep
