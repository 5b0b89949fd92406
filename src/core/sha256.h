// SHA-256 (FIPS 180-4) and HMAC-SHA256, for what must be unguessable or must match across ranks:
// the rendezvous store's handshake and key prefixes, derived from the job's secret, and digests of
// files every rank must hold alike. Debian
// packages no hash library that LibTorch already brings in, and this is small.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace dptrain::core {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  Sha256Digest finish();  // once; the object is spent afterwards

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes so far
};

Sha256Digest sha256(std::string_view bytes);
// HMAC-SHA256 (RFC 2104) of `message` under `key`.
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);
// Lower-case hex of some bytes, or of a digest (64 characters).
std::string hex(std::string_view bytes);
std::string hex(const Sha256Digest& digest);

}  // namespace dptrain::core
