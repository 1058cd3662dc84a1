// Weights the EP reads from the model's external data file itself.
//
// On a GPU backend the fused node's inputs live in device memory, so an
// initializer ORT passes in is one ORT must load from the file and copy to the
// device while it creates the session, every initializer, one at a time (on
// the 8B-shaped int4 model that was most of an 8 s warm session).  The EP
// asks ORT to drop the constant initializers from the fused node instead
// (OrtNodeFusionOptions::drop_constant_initializers) and keeps each weight
// stored in an external data file as a read-only mapping of that file: no
// page is read while the session is created, and a runtime state uploads the
// weight on its first run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace hipdnn_ep {

class MappedFile {
 public:
  // The whole file, mapped read-only and private; one mapping per file in the
  // process while any holder keeps it.  Throws EpError when the file cannot be
  // opened or mapped.
  static std::shared_ptr<const MappedFile> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The bytes [offset, offset + length) of the file, or nullptr when they are
  // not all inside it.
  const char* Range(int64_t offset, size_t length) const;
  // Throws EpError when the file changed on disk since it was mapped (its
  // size or modification time): reading a page past a truncated end would
  // kill the process with SIGBUS, and rewritten bytes are not the model's
  // weights. Asked before the mapping is read; a change between this check
  // and the read is not seen.
  void CheckUnchanged() const;
  // Gives back the resident pages wholly inside [bytes, bytes + length) (a
  // range of this mapping): once a weight is on the device its host pages are
  // not needed, and the mapping reads them from the file again if they are.
  void DropPages(const char* bytes, size_t length) const;

 private:
  MappedFile() = default;
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;           // kept open: fstat sees the mapped file even once its path names another
  int64_t mtime_ns_ = 0;  // the modification time when mapped
};

// Where ORT says an initializer's bytes are stored (ValueInfo_GetExternalInitializerInfo).
struct ExternalLocation {
  std::string file;  // empty: not stored in an external file
  int64_t offset = 0;
  size_t length = 0;
};

}  // namespace hipdnn_ep
