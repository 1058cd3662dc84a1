// SHA-256 (FIPS 180-4) for compile-cache keys, and HMAC-SHA256 (RFC 2104)
// for the per-install tags over native code.
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
  std::string Digest();     // finalizes; the 32 raw bytes; call once

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string Sha256Hex(const std::string& s);

// HMAC-SHA256(key, message) as 64 lower-case hex digits.  Unlike
// SHA-256(key || message) it cannot be extended to a longer message without
// the key.
std::string HmacSha256Hex(const std::string& key, const std::string& message);

// a == b in time that depends only on the lengths (for comparing tags).
bool ConstantTimeEqual(const std::string& a, const std::string& b);

}  // namespace hipdnn_ep
