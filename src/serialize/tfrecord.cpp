#include "serialize/tfrecord.h"

#include <cstdint>

#include "serialize/crc32c.h"
#include "serialize/little_endian.h"

namespace dptrain::serialize {
namespace {

constexpr size_t kHeaderBytes = 12;  // length and its CRC
constexpr size_t kFooterBytes = 4;

}  // namespace

std::string tfrecord_frame(std::string_view data) {
  std::string out;
  out.reserve(kHeaderBytes + data.size() + kFooterBytes);
  append_le(out, data.size(), 8);
  append_le(out, masked_crc32c(out), 4);
  out.append(data);
  append_le(out, masked_crc32c(data), 4);
  return out;
}

TfRecordScan scan_tfrecords(std::string_view bytes) {
  TfRecordScan scan;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t left = bytes.size() - at;
    if (left < kHeaderBytes) break;
    const uint64_t length = read_le(bytes, at, 8);
    if (read_le(bytes, at + 8, 4) != masked_crc32c(bytes.substr(at, 8))) break;
    if (left < kHeaderBytes + kFooterBytes || length > left - kHeaderBytes - kFooterBytes) break;
    const std::string_view data = bytes.substr(at + kHeaderBytes, length);
    if (read_le(bytes, at + kHeaderBytes + length, 4) != masked_crc32c(data)) break;
    scan.records.push_back(data);
    at += kHeaderBytes + length + kFooterBytes;
  }
  scan.valid_bytes = at;
  scan.complete = at == bytes.size();
  return scan;
}

}  // namespace dptrain::serialize
