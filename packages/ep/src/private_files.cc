#include "private_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace hipdnn_ep {
namespace fs = std::filesystem;

namespace {
std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%03o", static_cast<unsigned>(mode & 0777));
  return buf;
}

std::string HexName(size_t bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : RandomBytes(bytes)) {
    out += hex[c >> 4];
    out += hex[c & 0xf];
  }
  return out;
}

// The problem with the opened folder `fd` as the cache ("" when none).
std::string FolderProblem(int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return std::string("cannot inspect it: ") + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "it is not a folder";
  const uid_t me = geteuid();
  if (st.st_uid != me) {
    return "it belongs to user id " + std::to_string(st.st_uid) + ", not to this process's user id " +
           std::to_string(me) + ". Whoever can write it decides which native code this process runs. Use a folder "
           "of your own (EP option cache_dir or HIPDNN_EP_CACHE_DIR)";
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    return "its mode " + Octal(st.st_mode) + " lets other users write it, and whoever can write it decides which "
           "native code this process runs. Run 'chmod go-w " + path + "' or use another folder";
  }
  return {};
}

// Opens the folder `name` in `dir_fd` without following a symbolic link.
int OpenFolder(int dir_fd, const std::string& name) {
  return openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

std::string Joined(const std::string& folder, const std::string& name) {
  return folder.empty() ? name : (fs::path(folder) / name).string();
}

void RemoveTreeAt(int dir_fd, const std::string& name, int depth) {
  if (unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return;
  // A folder (EISDIR on Linux, EPERM elsewhere): empty it through its own descriptor.
  const int fd = depth < 64 ? OpenFolder(dir_fd, name) : -1;
  if (fd >= 0) {
    if (DIR* d = fdopendir(fd)) {
      std::vector<std::string> names;
      while (dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
      }
      for (const std::string& n : names) RemoveTreeAt(dirfd(d), n, depth + 1);
      closedir(d);
    } else {
      close(fd);
    }
  }
  unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR);
}
}  // namespace

bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string RandomBytes(size_t size) {
  std::string out(size, '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t n = getrandom(out.data() + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw EpError(std::string("hipdnn-ep: getrandom failed: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return out;
}

std::string ReadRegularFile(int dir_fd, const std::string& name, const std::string& shown, const std::string& what,
                            uint64_t max_bytes, FileOwner owner) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = "hipdnn-ep: cannot open the " + what + " " + shown + ": " + std::strerror(err) +
                            (err == ELOOP ? " (it is a symbolic link, which is not followed)" : "");
    if (err == ENOENT) throw FileMissing(msg);
    throw EpError(msg);
  }
  struct stat st {};
  std::string out;
  std::string problem;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = "it is not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    problem = "it is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
              " bytes " + (max_bytes == kMaxArtifactBytes ? std::string("(1 GiB) an artifact may have")
                                                          : std::string("such a file may have"));
  } else if (owner != FileOwner::kAnyone && st.st_uid != geteuid()) {
    problem = "it belongs to user id " + std::to_string(st.st_uid) + ", not to this process's user";
  } else if (owner == FileOwner::kMeOnly && (st.st_mode & 077)) {
    problem = "its mode " + Octal(st.st_mode) + " lets other users access it; run 'chmod 600 " + shown + "'";
  } else {
    out.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) problem = std::string("reading failed: ") + std::strerror(errno);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (out.size() > max_bytes) {  // grew while being read
        problem = "it grew beyond " + std::to_string(max_bytes) + " bytes while being read";
        break;
      }
    }
  }
  close(fd);
  if (!problem.empty()) throw EpError("hipdnn-ep: refusing the " + what + " " + shown + ": " + problem);
  return out;
}

PrivateDir PrivateDir::Open(const std::string& path, const std::string& what) {
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    throw EpError("hipdnn-ep: cannot create the " + what + " folder " + path + ": " + std::strerror(errno) +
                  "; choose a writable folder with the EP option cache_dir or HIPDNN_EP_CACHE_DIR");
  }
  const int fd = OpenFolder(AT_FDCWD, path);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      throw EpError("hipdnn-ep: refusing the " + what + " folder " + path + ": it is a symbolic link. Whoever can "
                    "replace a folder by a link decides which native code this process runs; use the folder it "
                    "points to, or another one, with the EP option cache_dir");
    }
    if (err == ENOTDIR) {
      throw EpError("hipdnn-ep: the " + what + " path " + path + " is not a folder; remove it or choose another "
                    "folder with the EP option cache_dir");
    }
    throw EpError("hipdnn-ep: cannot open the " + what + " folder " + path + ": " + std::strerror(err));
  }
  PrivateDir dir(fd, path);
  const std::string problem = FolderProblem(fd, path);
  if (problem == "it is not a folder") {
    throw EpError("hipdnn-ep: the " + what + " path " + path + " is not a folder; remove it or choose another "
                  "folder with the EP option cache_dir");
  }
  if (!problem.empty()) throw EpError("hipdnn-ep: refusing the " + what + " folder " + path + ": " + problem);
  return dir;
}

PrivateDir::PrivateDir(PrivateDir&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

PrivateDir& PrivateDir::operator=(PrivateDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

PrivateDir::~PrivateDir() {
  if (fd_ >= 0) close(fd_);
}

std::string PrivateDir::PathForChild() const {
  // Another process may open /proc/<pid>/fd/<n> when it runs as the same user
  // and this process is dumpable (not, say, after a setuid exec).
  const std::string proc = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd_);
  struct stat via_proc {}, held {};
  if (prctl(PR_GET_DUMPABLE) == 1 && stat(proc.c_str(), &via_proc) == 0 && fstat(fd_, &held) == 0 &&
      via_proc.st_dev == held.st_dev && via_proc.st_ino == held.st_ino) {
    return proc;
  }
  return path_;
}

PrivateDir PrivateDir::Sub(const std::string& name, bool create) const {
  const std::string shown = Joined(path_, name);
  if (create && mkdirat(fd_, name.c_str(), 0700) != 0 && errno != EEXIST) {
    throw EpError("hipdnn-ep: cannot create the folder " + shown + ": " + std::strerror(errno));
  }
  const int fd = OpenFolder(fd_, name);
  if (fd < 0) {
    if (errno == ENOENT && !create) return PrivateDir();
    throw EpError("hipdnn-ep: cannot open the folder " + shown + ": " + std::strerror(errno) +
                  (errno == ELOOP || errno == ENOTDIR ? " (it is not a folder, or a symbolic link, not followed)" : ""));
  }
  PrivateDir sub(fd, shown);
  const std::string problem = FolderProblem(fd, shown);
  if (!problem.empty()) throw EpError("hipdnn-ep: refusing the folder " + shown + ": " + problem);
  return sub;
}

PrivateDir PrivateDir::MakeTemp(const std::string& stem, std::string* name) const {
  for (int tries = 0;; ++tries) {
    const std::string candidate = stem + "-" + HexName(6);
    if (mkdirat(fd_, candidate.c_str(), 0700) == 0) {
      if (name) *name = candidate;
      return Sub(candidate, false);
    }
    if (errno != EEXIST || tries >= 16) {
      throw EpError("hipdnn-ep: cannot create a temporary folder in " + path_ + ": " + std::strerror(errno));
    }
  }
}

std::string PrivateDir::Read(const std::string& relative, const std::string& what, uint64_t max_bytes,
                             FileOwner owner) const {
  const fs::path rel(relative);
  const std::string file = rel.filename().string();
  PrivateDir walked;
  const PrivateDir* at = this;
  for (const fs::path& part : rel.parent_path()) {
    PrivateDir next = at->Sub(part.string(), false);
    if (!next.is_open()) {
      throw FileMissing("hipdnn-ep: cannot open the " + what + " " + Joined(path_, relative) +
                        ": a folder on its way is missing");
    }
    walked = std::move(next);
    at = &walked;
  }
  return ReadRegularFile(at->fd(), file, Joined(path_, relative), what, max_bytes, owner);
}

bool PrivateDir::Exists(const std::string& name) const {
  struct stat st {};
  return fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void PrivateDir::WriteNew(const std::string& name, const std::string& content, unsigned mode) const {
  const int fd = openat(fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        static_cast<mode_t>(mode));
  bool ok = fd >= 0 && WriteAll(fd, content);
  const int err = errno;
  if (fd >= 0 && close(fd) != 0) ok = false;
  if (!ok) throw EpError("hipdnn-ep: cannot write " + Joined(path_, name) + ": " + std::strerror(err));
}

bool PrivateDir::PublishNew(const std::string& name, const std::string& content, unsigned mode) const {
  const std::string tmp = "." + name + ".tmp-" + HexName(6);
  const int fd = openat(fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw EpError("hipdnn-ep: cannot create a file beside " + Joined(path_, name) + ": " + std::strerror(errno));
  }
  bool ok = fchmod(fd, static_cast<mode_t>(mode)) == 0 && WriteAll(fd, content) && fsync(fd) == 0;
  int err = errno;
  ok = close(fd) == 0 && ok;
  if (!ok) {
    unlinkat(fd_, tmp.c_str(), 0);
    throw EpError("hipdnn-ep: cannot write " + Joined(path_, name) + ": " + std::strerror(err));
  }
  // linkat(2) never replaces an existing file: the first publisher wins.
  const bool linked = linkat(fd_, tmp.c_str(), fd_, name.c_str(), 0) == 0;
  err = errno;
  unlinkat(fd_, tmp.c_str(), 0);
  if (!linked && err != EEXIST) {
    throw EpError("hipdnn-ep: cannot create " + Joined(path_, name) + ": " + std::strerror(err));
  }
  return linked;
}

bool PrivateDir::MoveTo(const std::string& name, const PrivateDir& to, const std::string& to_name) const {
  return renameat(fd_, name.c_str(), to.fd_, to_name.c_str()) == 0;
}

void PrivateDir::RemoveTree(const std::string& name) const { RemoveTreeAt(fd_, name, 0); }

std::vector<std::string> PrivateDir::List() const {
  std::vector<std::string> names;
  const int fd = OpenFolder(fd_, ".");
  if (fd < 0) return names;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return names;
  }
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

std::string MakePrivateTempDir(const std::string& parent, const std::string& stem) {
  std::string templ = (fs::path(parent) / (stem + "-XXXXXX")).string();
  if (mkdtemp(templ.data()) == nullptr) {  // mkdtemp creates it with mode 0700
    throw EpError("hipdnn-ep: cannot create a temporary folder in " + parent + ": " + std::strerror(errno));
  }
  return templ;
}

std::string PerUserTempDir(const std::string& stem) {
  return (fs::temp_directory_path() / (stem + "-" + std::to_string(geteuid()))).string();
}

std::string ForeignAncestor(const std::string& path) {
  const uid_t me = geteuid();
  for (fs::path p = fs::path(path).lexically_normal().parent_path();; p = p.parent_path()) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && st.st_uid != me && st.st_uid != 0) {
      return p.string() + " belongs to user id " + std::to_string(st.st_uid);
    }
    if (!p.has_relative_path()) break;  // reached the root
  }
  return {};
}

}  // namespace hipdnn_ep
