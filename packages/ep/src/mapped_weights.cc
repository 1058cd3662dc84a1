#include "mapped_weights.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "ep_utils.h"

namespace hipdnn_ep {
namespace {

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + static_cast<int64_t>(st.st_mtim.tv_nsec);
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::Open(const std::string& path) {
  static std::mutex mu;
  static std::map<std::pair<dev_t, ino_t>, std::weak_ptr<const MappedFile>> open;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw EpError("hipdnn-ep: cannot open the external data file " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd);
    throw EpError("hipdnn-ep: the external data " + path + " is not a regular file" +
                  (err ? std::string(": ") + std::strerror(err) : std::string()));
  }
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(st.st_dev, st.st_ino);
  if (auto held = open[key].lock();
      held && held->size_ == static_cast<size_t>(st.st_size) && held->mtime_ns_ == MtimeNs(st)) {
    ::close(fd);
    return held;
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw EpError("hipdnn-ep: cannot map the external data file " + path + ": " + std::strerror(err));
    }
    file->data_ = static_cast<const char*>(p);
  }
  file->fd_ = fd;
  file->mtime_ns_ = MtimeNs(st);
  open[key] = file;
  return file;
}

void MappedFile::DropPages(const char* bytes, size_t length) const {
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || bytes < data_ || length > size_ - static_cast<size_t>(bytes - data_)) return;
  const uintptr_t mask = static_cast<uintptr_t>(page) - 1;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes) + mask) & ~mask;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(bytes) + length) & ~mask;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void MappedFile::CheckUnchanged() const {
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    throw EpError("hipdnn-ep: cannot check the external data file " + path_ + ": " + std::strerror(errno));
  }
  if (static_cast<size_t>(st.st_size) != size_ || MtimeNs(st) != mtime_ns_) {
    throw EpError("hipdnn-ep: the external data file " + path_ + " changed on disk after the session was created (" +
                  std::to_string(size_) + " bytes then, " + std::to_string(st.st_size) +
                  " now); its weights were not read. Create the session again from the model as it is now.");
  }
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

const char* MappedFile::Range(int64_t offset, size_t length) const {
  if (offset < 0 || static_cast<uint64_t>(offset) > size_ || length > size_ - static_cast<size_t>(offset)) {
    return nullptr;
  }
  return data_ + offset;
}

}  // namespace hipdnn_ep
