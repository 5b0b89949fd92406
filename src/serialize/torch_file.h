// The file format of Python's `torch.save`: a zip archive holding data.pkl (a pickle of plain
// containers and tensor rebuilds) and one stored record per tensor storage (data/0, data/1, ...).
// What dptrain writes in it, Python reads with `torch.load(path, weights_only=True)`; what it
// reads goes through serialize/zip_reader and serialize/pickle alone, never through LibTorch's
// TorchScript importer, which would compile and run code that an archive carries.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "serialize/pickle.h"
#include "serialize/zip_reader.h"

namespace dptrain::serialize {

// A TorchScript archive was given where a torch.save file of tensors was expected.
class CodeArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A record of raw bytes beside the pickle's, which data.pkl does not name: torch.load leaves it
// alone, and a reader that wants it reads it by name (ZipReader), checked against its own bounds.
struct RawRecord {
  std::string name;
  torch::Tensor contiguous;  // its bytes, on the CPU
};

// The bytes of a torch.save file holding `root`, and `raw` records after its storages.
std::string encode_torch_file(const Value& root, const std::vector<RawRecord>& raw = {});

// The object a torch.save file holds. Throws ArchiveError or PickleError saying what is wrong,
// and CodeArchiveError for a TorchScript archive (torch.jit.save's, or a checkpoint of dptrain
// before format 3), which is refused unread. Tensors are views of their storages (see pickle.h),
// each storage read into memory of its own only once the storages named so far fit
// `limits.storage_bytes` (judged from the directory, before any byte of it is read or checked), so
// that a file claiming gigabytes costs no more than the model it must fit can need.
ValuePtr decode_torch_file(const ByteSource& source, const DecodeLimits& limits = {});

// The size of the largest torch.save file whose reading `limits` allow: its storages, its data.pkl
// and directory at their most, and room for each record's header and padding. A bigger file is no
// file of those weights, whatever it holds: it can be refused before any of it is read (or hashed).
uint64_t largest_file_bytes(const DecodeLimits& limits);
ValuePtr decode_torch_file(std::string_view bytes, const DecodeLimits& limits = {});

}  // namespace dptrain::serialize
