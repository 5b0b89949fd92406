#include "core/crypto.h"

#include <sodium.h>

#include "core/error.h"

namespace dptrain::core {
namespace {

static_assert(sizeof(crypto_hash_sha256_state) <= 128, "Sha256's state_ is too small");
static_assert(alignof(crypto_hash_sha256_state) <= 16, "Sha256's state_ is aligned too loosely");
static_assert(crypto_hash_sha256_BYTES == 32 && crypto_auth_hmacsha256_BYTES == 32);

// sodium_init() once per process (thread-safe, and cheap after the first call), before any other
// libsodium call: it picks the random source and the fastest implementations.
void ensure_sodium() {
  static const bool ready = sodium_init() >= 0;
  if (!ready) {
    throw Error(ErrorCode::kDistributed, "libsodium could not start (no random source?)",
                "this Linux must offer getrandom(2) or /dev/urandom");
  }
}

const unsigned char* bytes_of(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

crypto_hash_sha256_state* sha_state(std::array<unsigned char, 128>& state) {
  return reinterpret_cast<crypto_hash_sha256_state*>(state.data());
}

}  // namespace

Sha256::Sha256() : state_{} {
  ensure_sodium();
  crypto_hash_sha256_init(sha_state(state_));
}

void Sha256::update(std::string_view bytes) {
  crypto_hash_sha256_update(sha_state(state_), bytes_of(bytes), bytes.size());
}

Sha256Digest Sha256::finish() {
  Sha256Digest digest{};
  crypto_hash_sha256_final(sha_state(state_), digest.data());
  return digest;
}

Sha256Digest sha256(std::string_view bytes) {
  ensure_sodium();
  Sha256Digest digest{};
  crypto_hash_sha256(digest.data(), bytes_of(bytes), bytes.size());
  return digest;
}

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
  ensure_sodium();
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, bytes_of(key), key.size());
  crypto_auth_hmacsha256_update(&state, bytes_of(message), message.size());
  Sha256Digest mac{};
  crypto_auth_hmacsha256_final(&state, mac.data());
  sodium_memzero(&state, sizeof state);
  return mac;
}

std::string hex(std::string_view bytes) {
  std::string out(bytes.size() * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), bytes_of(bytes), bytes.size());
  out.pop_back();  // the terminating NUL
  return out;
}

std::string hex(const Sha256Digest& digest) {
  return hex(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string random_bytes(size_t count) {
  ensure_sodium();
  std::string bytes(count, '\0');
  randombytes_buf(bytes.data(), bytes.size());
  return bytes;
}

bool same_bytes(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace dptrain::core
