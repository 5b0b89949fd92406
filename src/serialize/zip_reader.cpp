#include "serialize/zip_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/terminal.h"
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
constexpr uint64_t kEndRecordSize = 22;
constexpr uint64_t kMaxComment = 65535;
constexpr uint64_t kLocalHeaderSize = 30;
constexpr uint64_t kDirectoryEntrySize = 46;
constexpr uint64_t kZip64LocatorSize = 20;
constexpr uint64_t kZip64EndSize = 56;
constexpr uint64_t kMaxNameBytes = 1024;

// `what` may quote the file's record names: printable, so that none reaches a terminal as a code.
[[noreturn]] void damaged(const std::string& what) {
  throw ArchiveError("a damaged zip archive: " + core::printable(what));
}

// A piece of the file read into memory, addressed by the file's offsets; every field read is
// checked against the piece's end.
class Block {
 public:
  Block(const ByteSource& source, uint64_t offset, uint64_t length, const std::string& what)
      : base_(offset) {
    if (offset > source.size || source.size - offset < length) {
      damaged(what + " past the end of the file");
    }
    bytes_.resize(length);
    if (length > 0) source.read(offset, length, bytes_.data());
  }

  uint64_t at(uint64_t offset, int width) const {
    const std::string_view field = span(offset, static_cast<uint64_t>(width), "a field");
    return read_le(field, 0, width);
  }

  std::string_view span(uint64_t offset, uint64_t length, const std::string& what) const {
    if (offset < base_ || offset - base_ > bytes_.size() ||
        bytes_.size() - (offset - base_) < length) {
      damaged(what + " past the end of its part of the file");
    }
    return std::string_view(bytes_).substr(offset - base_, length);
  }

  std::string_view bytes() const { return bytes_; }

 private:
  uint64_t base_;
  std::string bytes_;
};

// What a file that does not open as a zip archive is, for a reader who gave the wrong file;
// `head` is its first bytes (up to 512).
[[noreturn]] void not_an_archive(std::string_view head, uint64_t size) {
  if (size == 0) throw NotAnArchiveError("the file is empty (0 bytes)");
  const std::string bytes = "(" + std::to_string(size) + " bytes)";
  if (head.substr(0, 2) == "PK") {
    throw NotAnArchiveError("the file is cut short " + bytes +
                            ": a zip archive whose end, its directory, is missing");
  }
  // Python's pickle protocol 2 opens with 0x80 0x02: torch.save's format before PyTorch 1.6.
  if (static_cast<uint8_t>(head[0]) == 0x80) {
    throw NotAnArchiveError(
        "a torch.save file in the format before PyTorch 1.6 (a bare pickle), "
        "which dptrain does not read");
  }
  const bool text = std::all_of(head.begin(), head.end(), [](char c) {
    return c == '\n' || c == '\r' || c == '\t' || (static_cast<uint8_t>(c) >= 0x20);
  });
  throw NotAnArchiveError(std::string(text ? "a text file " : "not a zip archive ") + bytes +
                          ", where torch.save writes a zip archive");
}

struct Directory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
};

// From the end-of-directory record (zip64's where it points on), searched backwards past a
// comment of up to 64 KB: only the file's last 64 KB are read for it.
Directory find_directory(const ByteSource& source) {
  const Block head(source, 0, std::min<uint64_t>(source.size, 512), "the file's start");
  if (head.bytes().substr(0, 4) != std::string_view("PK\x03\x04", 4) ||
      source.size < kEndRecordSize) {
    not_an_archive(head.bytes(), source.size);
  }
  const uint64_t lowest = source.size - std::min(source.size, kEndRecordSize + kMaxComment);
  const Block tail(source, lowest, source.size - lowest, "the file's end");
  for (uint64_t at = source.size - kEndRecordSize;; --at) {
    if (tail.at(at, 4) == kEndOfDirectory) {
      Directory d{tail.at(at + 16, 4), tail.at(at + 12, 4), tail.at(at + 10, 2)};
      if (d.offset == kMax32 || d.size == kMax32 || d.entries == 0xffff) {
        if (at < kZip64LocatorSize) damaged("no zip64 locator");
        const Block locator(source, at - kZip64LocatorSize, kZip64LocatorSize, "the zip64 locator");
        if (locator.at(at - kZip64LocatorSize, 4) != kZip64Locator) damaged("no zip64 locator");
        const uint64_t end64 = locator.at(at - kZip64LocatorSize + 8, 8);
        const Block end(source, end64, kZip64EndSize, "the zip64 directory end");
        if (end.at(end64, 4) != kZip64EndOfDirectory) damaged("no zip64 directory end");
        d = {end.at(end64 + 48, 8), end.at(end64 + 40, 8), end.at(end64 + 32, 8)};
      }
      return d;
    }
    if (at == lowest) not_an_archive(head.bytes(), source.size);
  }
}

// The zip64 extra field's 8-byte values replace, in order, those of the 32-bit fields that are
// 0xffffffff.
void read_zip64_extra(const Block& f, uint64_t extra, uint64_t extra_length, uint64_t& usize,
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
ZipReader::Entry read_entry(const Block& f, uint64_t& at) {
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
  // torch.save's names are short ("archive/data/17"); a long one would be held twice per record.
  if (name_length > kMaxNameBytes) {
    damaged("a record name of " + std::to_string(name_length) + " bytes");
  }
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
// many times). Only the header is read; the bytes must lie inside the file.
uint64_t data_offset(const ByteSource& source, const ZipReader::Entry& e) {
  const std::string what = "record " + e.name + "'s header";
  const Block header(source, e.local_header, kLocalHeaderSize, what);
  if (header.at(e.local_header, 4) != kLocalHeader) damaged("record " + e.name + " has no header");
  const uint64_t name_length = header.at(e.local_header + 26, 2);
  const uint64_t extra_length = header.at(e.local_header + 28, 2);
  const Block name(source, e.local_header + kLocalHeaderSize, name_length, what);
  if (name.bytes() != e.name) damaged("record " + e.name + " has another name in its own header");
  const uint64_t data = e.local_header + kLocalHeaderSize + name_length + extra_length;
  if (data > source.size || source.size - data < e.size) {
    damaged("record " + e.name + " past the end of the file");
  }
  return data;
}

// No two records' headers and bytes share a byte of the file.
void check_disjoint(std::vector<std::pair<uint64_t, uint64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) damaged("records that overlap in the file");
  }
}

}  // namespace

ByteSource memory_source(std::string_view bytes) {
  return {bytes.size(), [bytes](uint64_t offset, size_t length, char* out) {
            std::memcpy(out, bytes.data() + offset, length);
          }};
}

ByteSource file_source(const core::ReadOnlyFile& file) {
  return {file.size(),
          [&file](uint64_t offset, size_t length, char* out) { file.read(offset, length, out); }};
}

ZipReader::ZipReader(ByteSource source) : source_(std::move(source)) {
  const Directory d = find_directory(source_);
  if (d.size > kMaxDirectoryBytes) {
    damaged("a central directory of " + std::to_string(d.size) + " bytes, more than the " +
            std::to_string(kMaxDirectoryBytes) + " a file of weights needs");
  }
  // Each entry takes at least 46 bytes: a count beyond that is a lie, refused before the loop.
  if (d.entries > d.size / kDirectoryEntrySize) damaged("more records than its directory holds");
  const Block directory(source_, d.offset, d.size, "the central directory");
  std::string folder;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t at = d.offset;
  for (uint64_t i = 0; i < d.entries; ++i) {
    Entry e = read_entry(directory, at);
    e.data = data_offset(source_, e);
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

const ZipReader::Entry& ZipReader::entry(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end())
    throw ArchiveError("no record " + core::printable(name) + " in the archive");
  return it->second;
}

std::string ZipReader::record(const std::string& name) const {
  std::string bytes(entry(name).size, '\0');
  read_record(name, bytes.data());
  return bytes;
}

void ZipReader::read_record(const std::string& name, char* out) const {
  const Entry& e = entry(name);
  // Stored records only: an inflated one could grow to any size its header claims.
  if (!e.stored) damaged("record " + e.name + " is compressed or encrypted");
  if (e.size > 0) source_.read(e.data, e.size, out);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t done = 0; done < e.size;) {  // zlib takes at most 4 GB at a time
    const auto chunk = static_cast<uInt>(std::min<uint64_t>(e.size - done, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out + done), chunk);
    done += chunk;
  }
  if (static_cast<uint32_t>(crc) != e.crc) {
    damaged("record " + e.name + " does not match its checksum");
  }
}

}  // namespace dptrain::serialize
