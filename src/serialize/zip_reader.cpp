#include "serialize/zip_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "serialize/little_endian.h"

namespace dptrain::serialize {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kDirectoryEntry = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint16_t kZip64Extra = 0x0001;
constexpr uint32_t kMax32 = 0xffffffff;
constexpr size_t kEndRecordSize = 22;
constexpr size_t kMaxComment = 65535;

[[noreturn]] void damaged(const std::string& what) {
  throw ArchiveError("a damaged zip archive: " + what);
}

// Little-endian fields, every read checked against the end of the bytes.
class Fields {
 public:
  explicit Fields(std::string_view bytes) : bytes_(bytes) {}

  uint64_t at(uint64_t offset, int width) const {
    if (offset > bytes_.size() || bytes_.size() - offset < static_cast<uint64_t>(width)) {
      damaged("a field past the end of the file");
    }
    return read_le(bytes_, offset, width);
  }

  std::string_view span(uint64_t offset, uint64_t length, const char* what) const {
    if (offset > bytes_.size() || bytes_.size() - offset < length) {
      damaged(std::string(what) + " past the end of the file");
    }
    return bytes_.substr(offset, length);
  }

  uint64_t size() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
};

// What a file that does not open as a zip archive is, for a reader who gave the wrong file.
[[noreturn]] void not_an_archive(std::string_view bytes) {
  if (bytes.empty()) throw NotAnArchiveError("the file is empty (0 bytes)");
  const std::string size = "(" + std::to_string(bytes.size()) + " bytes)";
  if (bytes.substr(0, 2) == "PK") {
    throw NotAnArchiveError("the file is cut short " + size +
                            ": a zip archive whose end, its directory, is missing");
  }
  // Python's pickle protocol 2 opens with 0x80 0x02: torch.save's format before PyTorch 1.6.
  if (static_cast<uint8_t>(bytes[0]) == 0x80) {
    throw NotAnArchiveError(
        "a torch.save file in the format before PyTorch 1.6 (a bare pickle), "
        "which dptrain does not read");
  }
  const bool text =
      std::all_of(bytes.begin(), bytes.begin() + std::min<size_t>(bytes.size(), 512), [](char c) {
        return c == '\n' || c == '\r' || c == '\t' || (static_cast<uint8_t>(c) >= 0x20);
      });
  throw NotAnArchiveError(std::string(text ? "a text file " : "not a zip archive ") + size +
                          ", where torch.save writes a zip archive");
}

struct Directory {
  uint64_t offset = 0;
  uint64_t entries = 0;
};

// From the end-of-directory record (zip64's where it points on), searched backwards past a
// comment of up to 64 KB.
Directory find_directory(const Fields& f, std::string_view bytes) {
  if (bytes.substr(0, 4) != std::string_view("PK\x03\x04", 4) || f.size() < kEndRecordSize) {
    not_an_archive(bytes);
  }
  const uint64_t lowest =
      f.size() > kEndRecordSize + kMaxComment ? f.size() - kEndRecordSize - kMaxComment : 0;
  for (uint64_t at = f.size() - kEndRecordSize;; --at) {
    if (f.at(at, 4) == kEndOfDirectory) {
      Directory d{f.at(at + 16, 4), f.at(at + 10, 2)};
      if (d.offset == kMax32 || d.entries == 0xffff) {
        if (at < 20 || f.at(at - 20, 4) != kZip64Locator) damaged("no zip64 locator");
        const uint64_t end64 = f.at(at - 20 + 8, 8);
        if (f.at(end64, 4) != kZip64EndOfDirectory) damaged("no zip64 directory end");
        d = {f.at(end64 + 48, 8), f.at(end64 + 32, 8)};
      }
      return d;
    }
    if (at == lowest) not_an_archive(bytes);
  }
}

// The zip64 extra field's 8-byte values replace, in order, those of the 32-bit fields that are
// 0xffffffff.
void read_zip64_extra(const Fields& f, uint64_t extra, uint64_t extra_length, uint64_t& usize,
                      uint64_t& csize, uint64_t& offset) {
  for (uint64_t at = extra; at + 4 <= extra + extra_length;) {
    const uint64_t id = f.at(at, 2);
    const uint64_t length = f.at(at + 2, 2);
    if (id == kZip64Extra) {
      uint64_t field = at + 4;
      for (uint64_t* value : {&usize, &csize, &offset}) {
        if (*value != kMax32) continue;
        if (field + 8 > at + 4 + length) damaged("a short zip64 field");
        *value = f.at(field, 8);
        field += 8;
      }
      return;
    }
    at += 4 + length;
  }
}

// One central-directory entry at `at`; `at` moves past it.
ZipReader::Entry read_entry(const Fields& f, uint64_t& at) {
  if (f.at(at, 4) != kDirectoryEntry) damaged("a broken central directory");
  const uint64_t flags = f.at(at + 8, 2);
  const uint64_t method = f.at(at + 10, 2);
  ZipReader::Entry e;
  e.crc = static_cast<uint32_t>(f.at(at + 16, 4));
  uint64_t csize = f.at(at + 20, 4);
  uint64_t usize = f.at(at + 24, 4);
  const uint64_t name_length = f.at(at + 28, 2);
  const uint64_t extra_length = f.at(at + 30, 2);
  const uint64_t comment_length = f.at(at + 32, 2);
  e.local_header = f.at(at + 42, 4);
  e.name = std::string(f.span(at + 46, name_length, "a record name"));
  read_zip64_extra(f, at + 46 + name_length, extra_length, usize, csize, e.local_header);
  e.stored = (flags & 1) == 0 && method == 0 && csize == usize;
  e.size = csize;
  at += 46 + name_length + extra_length + comment_length;
  return e;
}

// Where the record's bytes begin, past its local header, whose name must be the directory's (a
// directory whose entries point at one record under many names would make one record count
// many times).
uint64_t data_offset(const Fields& f, const ZipReader::Entry& e, const std::string& full_name) {
  if (f.at(e.local_header, 4) != kLocalHeader) damaged("record " + full_name + " has no header");
  const uint64_t name_length = f.at(e.local_header + 26, 2);
  const uint64_t extra_length = f.at(e.local_header + 28, 2);
  if (f.span(e.local_header + 30, name_length, "a record name") != full_name) {
    damaged("record " + full_name + " has another name in its own header");
  }
  const uint64_t data = e.local_header + 30 + name_length + extra_length;
  f.span(data, e.size, ("record " + full_name).c_str());  // inside the file
  return data;
}

// No two records' headers and bytes share a byte of the file.
void check_disjoint(std::vector<std::pair<uint64_t, uint64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) damaged("records that overlap in the file");
  }
}

// The record's bytes, checked against its CRC-32.
std::string_view record_data(const Fields& f, const ZipReader::Entry& e) {
  // Stored records only: an inflated one could grow to any size its header claims.
  if (!e.stored) damaged("record " + e.name + " is compressed or encrypted");
  const std::string_view bytes = f.span(e.data, e.size, ("record " + e.name).c_str());
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < bytes.size();) {  // zlib takes at most 4 GB at a time
    const auto chunk = static_cast<uInt>(std::min<size_t>(bytes.size() - done, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done), chunk);
    done += chunk;
  }
  if (static_cast<uint32_t>(crc) != e.crc) {
    damaged("record " + e.name + " does not match its checksum");
  }
  return bytes;
}

}  // namespace

ZipReader::ZipReader(std::string_view bytes) : bytes_(bytes) {
  const Fields f(bytes);
  const Directory d = find_directory(f, bytes);
  // Each entry takes at least 46 bytes: a count beyond that is a lie, refused before the loop.
  if (d.entries > f.size() / 46) damaged("more records than the file can hold");
  std::string folder;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t at = d.offset;
  for (uint64_t i = 0; i < d.entries; ++i) {
    Entry e = read_entry(f, at);
    e.data = data_offset(f, e, e.name);
    ranges.emplace_back(e.local_header, e.data + e.size);
    // LibTorch names records under one top folder ("archive/data.pkl") and drops it when reading.
    const size_t slash = e.name.find('/');
    if (slash == std::string::npos || slash == 0) damaged("record " + e.name + " has no folder");
    if (i == 0) folder = e.name.substr(0, slash);
    if (e.name.compare(0, slash, folder) != 0 || e.name.size() == slash + 1) {
      damaged("record " + e.name + " lies outside the archive's folder " + folder);
    }
    e.name = e.name.substr(slash + 1);
    if (!entries_.emplace(e.name, e).second) damaged("record " + e.name + " twice");
  }
  check_disjoint(std::move(ranges));
}

std::vector<std::string> ZipReader::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;
}

std::string_view ZipReader::record(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) throw ArchiveError("no record " + name + " in the archive");
  return record_data(Fields(bytes_), it->second);
}

}  // namespace dptrain::serialize
