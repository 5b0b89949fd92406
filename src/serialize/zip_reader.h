// The zip archive that torch.save and LibTorch's writer make (stored records under one top folder),
// read piece by piece by code of our own that trusts nothing in it: LibTorch's reader checks no
// CRCs, inflates a record to whatever size its header declares, and hands TorchScript archives to
// a compiler. Here the directory is read first (at most kMaxDirectoryBytes of it): names appear
// once, lie in one top folder and match their records' own headers, and no two records share a
// byte of the file (so the records' sizes add up to less than the file's). A record's size is known
// before any of its bytes are read, so that a caller can refuse one larger than it can need; a
// record read must be stored, never compressed (so nothing grows beyond the file), and match its
// CRC-32.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/fs.h"

namespace dptrain::serialize {

// A damaged or unsupported archive; the message says what is wrong.
class ArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The file as a whole is no zip archive: empty, something else (a text file, an old-style
// torch.save pickle), or one cut short. Its message says which in plain words, without the
// archive's internals, since the reader can do nothing but give another file.
class NotAnArchiveError : public ArchiveError {
 public:
  using ArchiveError::ArchiveError;
};

// Where an archive's bytes come from: a file read with checked reads (so a sparse file costs what
// is read, and one that shrinks while it is read is an error, where a mapping of it would end the
// process with SIGBUS), or bytes in memory.
struct ByteSource {
  uint64_t size = 0;
  // Fills `out` with the `length` bytes at `offset`; the reader asks only within `size`.
  std::function<void(uint64_t offset, size_t length, char* out)> read;
};

// `bytes` as a source; they must outlive it.
ByteSource memory_source(std::string_view bytes);
// A file as a source, read as it is asked for; it must outlive the source.
ByteSource file_source(const core::ReadOnlyFile& file);

// The central directory of a file of weights names some hundreds of records; a bigger one is
// refused before it is read.
constexpr uint64_t kMaxDirectoryBytes = uint64_t{16} << 20;

class ZipReader {
 public:
  // Reads the central directory and each record's header, nothing else.
  explicit ZipReader(ByteSource source);
  // The same over bytes in memory, which must outlive the reader.
  explicit ZipReader(std::string_view bytes) : ZipReader(memory_source(bytes)) {}

  // Record names without the archive's top folder ("data.pkl", "data/0"), as LibTorch names them.
  std::vector<std::string> names() const;
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  // A record's size as the directory gives it, with nothing read; ArchiveError when there is none.
  uint64_t size_of(const std::string& name) const { return entry(name).size; }
  // A record's bytes, checked as above; ArchiveError when there is none of that name or it fails.
  std::string record(const std::string& name) const;
  // The same into `out`, which holds size_of(name) bytes.
  void read_record(const std::string& name, char* out) const;

  // A record as the central directory describes it.
  struct Entry {
    std::string name;
    uint64_t size = 0;  // as stored in the file
    uint64_t local_header = 0;
    uint64_t data = 0;  // where its bytes begin
    uint32_t crc = 0;
    bool stored = false;  // neither compressed nor encrypted
  };

 private:
  const Entry& entry(const std::string& name) const;

  ByteSource source_;
  std::map<std::string, Entry> entries_;
};

}  // namespace dptrain::serialize
