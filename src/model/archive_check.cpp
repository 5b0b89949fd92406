#include "model/archive_check.h"

#include <caffe2/serialize/inline_container.h>
#include <zlib.h>

#include <map>
#include <sstream>
#include <stdexcept>

#include "model/pickle.h"

namespace dptrain::model {
namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kDirectoryEntry = 0x02014b50;

[[noreturn]] void damaged(const std::string& what) {
  throw std::runtime_error("a damaged zip archive: " + what);
}

uint64_t read_le(const std::string& bytes, uint64_t at, int width) {
  if (at > bytes.size() || bytes.size() - at < static_cast<uint64_t>(width)) {
    damaged("a field past the end of the file");
  }
  uint64_t value = 0;
  for (int i = 0; i < width; ++i) {
    value |= uint64_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
  }
  return value;
}

struct Directory {
  uint64_t offset = 0;
  uint64_t entries = 0;
};

// The central directory, found from the end-of-directory record (zip64's where it points on).
Directory find_directory(const std::string& bytes) {
  if (bytes.size() < 22) damaged("too short to be one");
  // The record is 22 bytes plus a comment of up to 65535.
  const uint64_t lowest = bytes.size() > 22 + 65535 ? bytes.size() - 22 - 65535 : 0;
  for (uint64_t at = bytes.size() - 22;; --at) {
    if (read_le(bytes, at, 4) == kEndOfDirectory) {
      Directory d{read_le(bytes, at + 16, 4), read_le(bytes, at + 10, 2)};
      if (d.offset == 0xffffffff || d.entries == 0xffff) {  // zip64: the real values elsewhere
        if (at < 20 || read_le(bytes, at - 20, 4) != kZip64Locator) damaged("no zip64 locator");
        const uint64_t end64 = read_le(bytes, at - 20 + 8, 8);
        if (read_le(bytes, end64, 4) != kZip64EndOfDirectory) damaged("no zip64 directory end");
        d = {read_le(bytes, end64 + 48, 8), read_le(bytes, end64 + 32, 8)};
      }
      return d;
    }
    if (at == lowest) damaged("no end-of-directory record");
  }
}

// Record name (without the archive's folder, as LibTorch's reader names it) -> CRC-32.
std::map<std::string, uint32_t> directory_crcs(const std::string& bytes) {
  const Directory d = find_directory(bytes);
  std::map<std::string, uint32_t> crcs;
  uint64_t at = d.offset;
  for (uint64_t i = 0; i < d.entries; ++i) {
    if (read_le(bytes, at, 4) != kDirectoryEntry) damaged("a broken central directory");
    const auto crc = static_cast<uint32_t>(read_le(bytes, at + 16, 4));
    const uint64_t name_length = read_le(bytes, at + 28, 2);
    const uint64_t extra_length = read_le(bytes, at + 30, 2);
    const uint64_t comment_length = read_le(bytes, at + 32, 2);
    if (bytes.size() - at < 46 + name_length) damaged("a name past the end of the file");
    const std::string name = bytes.substr(at + 46, name_length);
    const size_t slash = name.find('/');
    crcs[slash == std::string::npos ? name : name.substr(slash + 1)] = crc;
    at += 46 + name_length + extra_length + comment_length;
  }
  return crcs;
}

}  // namespace

void check_archive(const std::string& bytes) {
  const std::map<std::string, uint32_t> crcs = directory_crcs(bytes);
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  for (const std::string& name : reader.getAllRecords()) {
    const auto [data, size] = reader.getRecord(name);
    const auto* begin = static_cast<const Bytef*>(data.get());
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t done = 0; done < size;) {  // zlib takes at most 4 GB at a time
      const auto chunk = static_cast<uInt>(std::min<size_t>(size - done, 1u << 30));
      crc = crc32(crc, begin + done, chunk);
      done += chunk;
    }
    const auto listed = crcs.find(name);
    if (listed == crcs.end() || listed->second != static_cast<uint32_t>(crc)) {
      damaged("record " + name + " does not match its checksum");
    }
    if (name.size() >= 4 && name.compare(name.size() - 4, 4, ".pkl") == 0) {
      pickle::check_operands(std::string(static_cast<const char*>(data.get()), size));
    }
  }
}

}  // namespace dptrain::model
