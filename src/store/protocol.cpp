#include "store/protocol.h"

#include "core/crypto.h"
#include "serialize/little_endian.h"

namespace dptrain::store {
namespace {

void put_u32(std::string& out, uint32_t v) {
  serialize::append_le(out, v, 4);
}

uint32_t get_u32(std::string_view in, size_t at) {
  return static_cast<uint32_t>(serialize::read_le(in, at, 4));
}

}  // namespace

std::string encode(const Frame& frame) {
  std::string out;
  out.push_back(static_cast<char>(frame.code));
  put_u32(out, static_cast<uint32_t>(frame.fields.size()));
  for (const std::string& field : frame.fields) {
    put_u32(out, static_cast<uint32_t>(field.size()));
    out += field;
  }
  return out;
}

size_t decode(std::string_view buffer, Frame& out) {
  if (buffer.size() < 5) return 0;
  const uint32_t count = get_u32(buffer, 1);
  if (count > kMaxFields) {
    throw ProtocolError("a frame of " + std::to_string(count) + " fields, more than " +
                        std::to_string(kMaxFields));
  }
  size_t at = 5;
  Frame frame;
  frame.code = static_cast<uint8_t>(buffer[0]);
  for (uint32_t i = 0; i < count; ++i) {
    if (buffer.size() - at < 4) return 0;
    const uint32_t length = get_u32(buffer, at);
    if (length > kMaxValue) {
      throw ProtocolError("a field of " + std::to_string(length) + " bytes, more than " +
                          std::to_string(kMaxValue));
    }
    at += 4;
    if (at + length > kMaxFrame) {
      throw ProtocolError("a frame of more than " + std::to_string(kMaxFrame) + " bytes");
    }
    if (buffer.size() - at < length) return 0;
    frame.fields.emplace_back(buffer.substr(at, length));
    at += length;
  }
  out = std::move(frame);
  return at;
}

core::Sha256Digest store_key(const std::string& secret) {
  return core::sha256("dptrain rendezvous store key\n" + secret);
}

std::string nonce() {
  return core::random_bytes(kNonceSize);
}

std::string hello(const std::string& client_nonce) {
  return std::string(kMagic, 4) + static_cast<char>(kVersion) + client_nonce;
}

std::optional<std::string> nonce_of_hello(std::string_view bytes) {
  if (bytes.size() != kHelloSize || bytes.substr(0, 4) != std::string_view(kMagic, 4) ||
      static_cast<uint8_t>(bytes[4]) != kVersion) {
    return std::nullopt;
  }
  return std::string(bytes.substr(5));
}

namespace {

std::string proof(const core::Sha256Digest& key, const char* side, const std::string& client_nonce,
                  const std::string& server_nonce) {
  const core::Sha256Digest mac =
      core::hmac_sha256(std::string_view(reinterpret_cast<const char*>(key.data()), key.size()),
                        std::string(side) + client_nonce + server_nonce);
  return std::string(reinterpret_cast<const char*>(mac.data()), mac.size());
}

}  // namespace

std::string server_proof(const core::Sha256Digest& key, const std::string& client_nonce,
                         const std::string& server_nonce) {
  return proof(key, "server", client_nonce, server_nonce);
}

std::string client_proof(const core::Sha256Digest& key, const std::string& client_nonce,
                         const std::string& server_nonce) {
  return proof(key, "client", client_nonce, server_nonce);
}

std::string integer_field(int64_t value) {
  std::string out;
  serialize::append_le(out, static_cast<uint64_t>(value), 8);
  return out;
}

int64_t integer_of(const std::string& field) {
  if (field.size() != 8)
    throw ProtocolError("an integer field of " + std::to_string(field.size()) + " bytes");
  return static_cast<int64_t>(serialize::read_le(field, 0, 8));
}

}  // namespace dptrain::store
