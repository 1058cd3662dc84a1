#include "verified_artifact.h"

#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <hipdnn_ep/runtime_abi.h>

#include "ep_utils.h"
#include "private_files.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux 6.3: an executable memfd where vm.memfd_noexec asks for a choice
#endif

namespace hipdnn_ep {
namespace fs = std::filesystem;

namespace {

int LoadedObjectNamed(struct dl_phdr_info* info, size_t, void* data) {
  const auto* name = static_cast<const std::string*>(data);
  return info->dlpi_name != nullptr && *name == info->dlpi_name;
}

// The dynamic loader identifies an object by the name it was opened with
// first: a path /proc/self/fd/N still naming an older loaded object (its
// descriptor closed, N reused) would return that object.  Moves `fd` to a
// number no loaded object is named after.
int FreshlyNamedFd(int fd) {
  for (int tries = 0; tries < 64; ++tries) {
    std::string name = "/proc/self/fd/" + std::to_string(fd);
    if (dl_iterate_phdr(LoadedObjectNamed, &name) == 0) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
    close(fd);
    if (moved < 0) return -1;
    fd = moved;
  }
  close(fd);
  return -1;
}

// A sealed memfd holding `bytes`, or -1 where memfd is unavailable.
int SealedMemfd(const std::string& bytes) {
  int fd = memfd_create("hipdnn-ep-artifact", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (fd < 0 && errno == EINVAL) fd = memfd_create("hipdnn-ep-artifact", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (!WriteAll(fd, bytes) ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    close(fd);
    return -1;
  }
  return FreshlyNamedFd(fd);
}

}  // namespace

std::unique_ptr<LoadedArtifact> LoadedArtifact::FromFile(
    const std::string& path, const std::function<void(const std::string& bytes)>& verify) {
  // Bounded before reading, and a FIFO or device is refused, never waited on.
  const std::string bytes = ReadRegularFile(AT_FDCWD, path, path, "artifact", kMaxArtifactBytes, FileOwner::kAnyone);
  verify(bytes);
  return FromBytes(bytes, path);
}

std::unique_ptr<LoadedArtifact> LoadedArtifact::FromBytes(const std::string& bytes, const std::string& origin) {
  std::unique_ptr<LoadedArtifact> a(new LoadedArtifact());
  a->origin_ = origin;
  a->bytes_ = bytes;
  a->fd_ = SealedMemfd(bytes);
  if (a->fd_ >= 0) {
    a->path_ = "/proc/self/fd/" + std::to_string(a->fd_);
    return a;
  }
  // No memfd: a new file (O_EXCL) in a folder only this user can enter.
  a->private_dir_ = MakePrivateTempDir(fs::temp_directory_path().string(), "hipdnn-ep-artifact");
  a->path_ = (fs::path(a->private_dir_) / HIPDNN_EP_ARTIFACT_FILE).string();
  int fd = open(a->path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500);
  bool ok = fd >= 0 && WriteAll(fd, bytes);
  int err = errno;
  if (fd >= 0 && close(fd) != 0) ok = false;
  if (!ok) {
    throw EpError("hipdnn-ep: cannot copy the verified artifact of " + origin + " to " + a->path_ + ": " +
                  std::strerror(err));
  }
  return a;
}

LoadedArtifact::~LoadedArtifact() {
  if (fd_ >= 0) close(fd_);
  if (!private_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(private_dir_, ec);  // a loaded object stays mapped after unlink
  }
}

}  // namespace hipdnn_ep
