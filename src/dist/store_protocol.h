// The wire format of dptrain's rendezvous store (dist/store_server.h, dist/store_client.h). A
// client first proves it belongs to the job: "DPTS", a version byte and the SHA-256 of the job's
// secret; the server answers one byte and closes the connection on a wrong secret. Then requests
// and replies are frames: a code byte, a field count (u32) and the fields, each a u32 length and
// its bytes, every integer little-endian. Every length is checked against the limits below before
// anything that long is held, so a peer can make the server hold no more than one frame's worth.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/sha256.h"

namespace dptrain::dist::store {

class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr char kMagic[] = "DPTS";
constexpr uint8_t kVersion = 1;
constexpr size_t kHelloSize = 4 + 1 + 32;
constexpr uint8_t kAccepted = 0;
constexpr uint8_t kRefused = 1;

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

// The handshake a client sends.
std::string hello(const core::Sha256Digest& secret_digest);
// Whether `bytes` (kHelloSize of them) is that handshake for `secret_digest`; compared in
// constant time.
bool hello_matches(std::string_view bytes, const core::Sha256Digest& secret_digest);

std::string integer_field(int64_t value);
int64_t integer_of(const std::string& field);

}  // namespace dptrain::dist::store
