#include "serialize/tfrecord.h"

#include <cstdint>

#include "serialize/crc32c.h"

namespace dptrain::serialize {
namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(std::string_view bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
  return v;
}

constexpr size_t kHeaderBytes = 12;  // length and its CRC
constexpr size_t kFooterBytes = 4;

}  // namespace

std::string tfrecord_frame(std::string_view data) {
  std::string out;
  out.reserve(kHeaderBytes + data.size() + kFooterBytes);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(out), 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

TfRecordScan scan_tfrecords(std::string_view bytes) {
  TfRecordScan scan;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t left = bytes.size() - at;
    if (left < kHeaderBytes) break;
    const uint64_t length = get_le(bytes, at, 8);
    if (get_le(bytes, at + 8, 4) != masked_crc32c(bytes.substr(at, 8))) break;
    if (left < kHeaderBytes + kFooterBytes || length > left - kHeaderBytes - kFooterBytes) break;
    const std::string_view data = bytes.substr(at + kHeaderBytes, length);
    if (get_le(bytes, at + kHeaderBytes + length, 4) != masked_crc32c(data)) break;
    scan.records.push_back(data);
    at += kHeaderBytes + length + kFooterBytes;
  }
  scan.valid_bytes = at;
  scan.complete = at == bytes.size();
  return scan;
}

}  // namespace dptrain::serialize
