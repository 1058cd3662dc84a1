#include "private_files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ep_utils.h"

namespace hipdnn_ep {
namespace fs = std::filesystem;

namespace {
std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%03o", static_cast<unsigned>(mode & 0777));
  return buf;
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

void EnsurePrivateDir(const std::string& dir, const std::string& what) {
  const fs::path path(dir);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw EpError("hipdnn-ep: cannot create the " + what + " folder " + dir + ": " + std::strerror(errno) +
                  "; choose a writable folder with the EP option cache_dir or HIPDNN_EP_CACHE_DIR");
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw EpError("hipdnn-ep: the " + what + " path " + dir + " is not a folder; remove it or choose another "
                  "folder with the EP option cache_dir");
  }
  const uid_t me = geteuid();
  if (st.st_uid != me) {
    throw EpError("hipdnn-ep: refusing the " + what + " folder " + dir + ": it belongs to user id " +
                  std::to_string(st.st_uid) + ", not to this process's user id " + std::to_string(me) +
                  ". Whoever can write it decides which native code this process runs. Use a folder of your own "
                  "(EP option cache_dir or HIPDNN_EP_CACHE_DIR)");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    throw EpError("hipdnn-ep: refusing the " + what + " folder " + dir + ": its mode " + Octal(st.st_mode) +
                  " lets other users write it, and whoever can write it decides which native code this process "
                  "runs. Run 'chmod go-w " + dir + "' or use another folder");
  }
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

bool PublishNewFile(const std::string& path, const std::string& content, unsigned mode) {
  const fs::path target(path);
  std::string tmp = (target.parent_path() / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  int fd = mkstemp(tmp.data());
  if (fd < 0) throw EpError("hipdnn-ep: cannot create a file beside " + path + ": " + std::strerror(errno));
  bool ok = fchmod(fd, static_cast<mode_t>(mode)) == 0 && WriteAll(fd, content) && fsync(fd) == 0;
  int err = errno;
  ok = close(fd) == 0 && ok;
  if (!ok) {
    unlink(tmp.c_str());
    throw EpError("hipdnn-ep: cannot write " + path + ": " + std::strerror(err));
  }
  // link(2) never replaces an existing file: the first publisher wins.
  const bool linked = link(tmp.c_str(), path.c_str()) == 0;
  err = errno;
  unlink(tmp.c_str());
  if (!linked && err != EEXIST) throw EpError("hipdnn-ep: cannot create " + path + ": " + std::strerror(err));
  return linked;
}

std::string ReadPrivateFile(const std::string& path, const std::string& what) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw EpError("hipdnn-ep: cannot open the " + what + " " + path + ": " + std::strerror(errno));
  struct stat st {};
  std::string out;
  std::string problem;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = "it is not a regular file";
  } else if (st.st_uid != geteuid()) {
    problem = "it belongs to user id " + std::to_string(st.st_uid) + ", not to this process's user";
  } else if (st.st_mode & 077) {
    problem = "its mode " + Octal(st.st_mode) + " lets other users access it; run 'chmod 600 " + path + "'";
  } else {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) problem = std::string("reading failed: ") + std::strerror(errno);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  if (!problem.empty()) throw EpError("hipdnn-ep: refusing the " + what + " " + path + ": " + problem);
  return out;
}

}  // namespace hipdnn_ep
