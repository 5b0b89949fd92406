// The wire format of dptrain's rendezvous store (store/server.h,
// store/client.h).
//
// The handshake proves to each side that the other holds the job's secret, without sending it or
// anything that could be replayed: the client sends "DPTS", a version byte and a fresh nonce; the
// server answers with a nonce of its own and HMAC(key, "server", both nonces); the client, having
// checked that, sends HMAC(key, "client", both nonces); the server answers one byte, and closes the
// connection on a wrong proof. The key is derived from the secret (store_key). A stale address
// that another process now listens on is thus found out by the client too.
//
// Then requests and replies are frames: a code byte, a field count (u32) and the fields, each a
// u32 length and its bytes, every integer little-endian. Every length is checked against the
// limits below before anything that long is held, so a peer can make the server hold no more
// than one frame's worth.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/crypto.h"

namespace dptrain::store {

class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr char kMagic[] = "DPTS";
constexpr uint8_t kVersion = 2;
constexpr size_t kNonceSize = 32;
constexpr size_t kHelloSize = 4 + 1 + kNonceSize;   // client: magic, version, nonce
constexpr size_t kChallengeSize = kNonceSize + 32;  // server: nonce, proof
constexpr size_t kProofSize = 32;                   // client: proof
constexpr uint8_t kAccepted = 0;
constexpr uint8_t kRefused = 1;

// The handshake's key: derived from the job's secret for this use alone.
core::Sha256Digest store_key(const std::string& secret);
// A fresh nonce from the system's random source.
std::string nonce();

std::string hello(const std::string& client_nonce);
// The client's nonce in a hello, or nothing when it is none (magic or version wrong).
std::optional<std::string> nonce_of_hello(std::string_view hello);
// The proofs of each side: HMAC(key, side, client nonce, server nonce).
std::string server_proof(const core::Sha256Digest& key, const std::string& client_nonce,
                         const std::string& server_nonce);
std::string client_proof(const core::Sha256Digest& key, const std::string& client_nonce,
                         const std::string& server_nonce);

// Requests.
enum class Op : uint8_t {
  kSet = 1,         // key value
  kGet = 2,         // key: waits until it is set, then its value
  kAdd = 3,         // key delta (8 bytes): the new sum (8 bytes), kept as decimal text
  kCompareSet = 4,  // key expected desired: the value now held
  kDelete = 6,      // key: 1 byte, whether it was there
  kCheck = 7,       // keys...: 1 byte, whether all are set
  kWait = 8,        // keys...: nothing, once all are set
  kNumKeys = 9,     // nothing: the number of keys (8 bytes)
};

// Replies: the code says how it went, the fields carry the answer or the error's message.
constexpr uint8_t kOk = 0;
constexpr uint8_t kError = 1;

constexpr uint32_t kMaxFields = 1024;
constexpr uint32_t kMaxKey = 4096;
constexpr uint32_t kMaxValue = uint32_t{64} << 20;
constexpr uint64_t kMaxFrame = uint64_t{kMaxValue} + (uint64_t{8} << 20);
// All keys and values the server holds at once: a job's rendezvous takes kilobytes.
constexpr uint64_t kMaxStoreBytes = uint64_t{256} << 20;

struct Frame {
  uint8_t code = 0;
  std::vector<std::string> fields;
};

std::string encode(const Frame& frame);

// A frame from the front of `buffer`: the bytes it took, or 0 when it is not whole yet. Throws
// ProtocolError as soon as a count or length breaks the limits.
size_t decode(std::string_view buffer, Frame& out);

std::string integer_field(int64_t value);
int64_t integer_of(const std::string& field);

}  // namespace dptrain::store
