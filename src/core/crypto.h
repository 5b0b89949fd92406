// Hashes, HMACs, random bytes and constant-time comparison, for what must be unguessable or must
// match across ranks: the rendezvous store's handshake, keys and secrets, run ids, and digests of
// files every rank must hold alike. Thin wrappers over libsodium (Debian's libsodium-dev), so that
// no cryptography of our own needs review; they add only std::string forms and dptrain's errors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dptrain::core {

using Sha256Digest = std::array<uint8_t, 32>;

// SHA-256 over bytes given a piece at a time (a file too large to hold whole).
class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  Sha256Digest finish();  // once; the object is spent afterwards

 private:
  // crypto_hash_sha256_state, whose size libsodium's header fixes; kept opaque here so that
  // sodium.h stays out of every includer.
  alignas(16) std::array<unsigned char, 128> state_;
};

Sha256Digest sha256(std::string_view bytes);
// HMAC-SHA256 (RFC 2104) of `message` under `key` (any length).
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);
// Lower-case hex of some bytes, or of a digest (64 characters).
std::string hex(std::string_view bytes);
std::string hex(const Sha256Digest& digest);

// `count` bytes from the system's random source; a distributed error when libsodium cannot start
// (once started, libsodium aborts rather than return bytes that are not random).
std::string random_bytes(size_t count);

// Whether `a` and `b` hold the same bytes, in a time that depends on their length alone (a proof
// compared with the expected one must not leak how much of it was right).
bool same_bytes(std::string_view a, std::string_view b);

}  // namespace dptrain::core
