// Prints HMAC-SHA256(key, message) and SHA-256(message) as computed by the
// plugin's own src/sha256.cc, for hex-encoded key and message arguments, and
// whether ConstantTimeEqual agrees with == on the two digests.
#include <cstdio>
#include <string>

#include "sha256.h"

static std::string Unhex(const char* s) {
  std::string out;
  for (size_t i = 0; s[i] && s[i + 1]; i += 2) out += static_cast<char>(std::stoi(std::string(s + i, 2), nullptr, 16));
  return out;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: hmac_check KEY_HEX MESSAGE_HEX\n");
    return 2;
  }
  const std::string key = Unhex(argv[1]), message = Unhex(argv[2]);
  const std::string mac = hipdnn_ep::HmacSha256Hex(key, message);
  const std::string digest = hipdnn_ep::Sha256Hex(message);
  std::printf("%s %s %d %d\n", mac.c_str(), digest.c_str(), hipdnn_ep::ConstantTimeEqual(mac, mac),
              hipdnn_ep::ConstantTimeEqual(mac, digest));
  return 0;
}
