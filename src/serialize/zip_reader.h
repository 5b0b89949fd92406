// The zip archive that torch.save and LibTorch's writer make (stored records under one top folder),
// read in place by code of our own that trusts nothing in it: LibTorch's reader checks no CRCs,
// inflates a record to whatever size its header declares, and hands TorchScript archives to a
// compiler. Here the directory is read first: names appear once, lie in one top folder and match
// their records' own headers, and no two records share a byte of the file (so the records' sizes
// add up to less than the file's). A record read must be stored, never compressed (so nothing
// grows beyond the file), and match its CRC-32.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

class ZipReader {
 public:
  // Reads the central directory; `bytes` must outlive the reader.
  explicit ZipReader(std::string_view bytes);

  // Record names without the archive's top folder ("data.pkl", "data/0"), as LibTorch names them.
  std::vector<std::string> names() const;
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  // A record's bytes, checked as above; ArchiveError when there is none of that name or it fails.
  std::string_view record(const std::string& name) const;

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
  std::string_view bytes_;
  std::map<std::string, Entry> entries_;
};

}  // namespace dptrain::serialize
