// Little-endian integers in byte strings, whatever the host's byte order: TFRecord frames,
// protobuf's fixed fields, zip headers, pickle's operands and the rendezvous store's frames.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dptrain::serialize {

// Appends the low `bytes` bytes of `v`.
inline void append_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The `bytes`-byte integer at `at` (the caller has checked that the bytes are there).
inline uint64_t read_le(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<uint8_t>(in[at + i])} << (8 * i);
  return v;
}

}  // namespace dptrain::serialize
