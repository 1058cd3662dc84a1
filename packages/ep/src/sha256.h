// SHA-256 (FIPS 180-4), for compile-cache keys and EPContext integrity tags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hipdnn_ep {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  void Update(const std::string& s) { Update(s.data(), s.size()); }
  std::string HexDigest();  // finalizes; call once

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string Sha256Hex(const std::string& s);

}  // namespace hipdnn_ep
