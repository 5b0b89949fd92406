// The file format of Python's `torch.save`: a zip archive holding data.pkl (a pickle of plain
// containers and tensor rebuilds) and one stored record per tensor storage (data/0, data/1, ...).
// What dptrain writes in it, Python reads with `torch.load(path, weights_only=True)`; what it
// reads goes through serialize/zip_reader and serialize/pickle alone, never through LibTorch's
// TorchScript importer, which would compile and run code that an archive carries.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "serialize/pickle.h"

namespace dptrain::serialize {

// A TorchScript archive was given where a torch.save file of tensors was expected.
class CodeArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The bytes of a torch.save file holding `root`.
std::string encode_torch_file(const Value& root);

// The object a torch.save file holds. Throws ArchiveError or PickleError saying what is wrong,
// and CodeArchiveError for a TorchScript archive (torch.jit.save's, or a checkpoint of dptrain
// before format 3), which is refused unread. Tensors are views of their storages (see pickle.h).
// With an `owner` that keeps `bytes` alive (a mapped file), each storage whose bytes are aligned
// for its type is the file's bytes themselves, read-only, held as long as a tensor uses it:
// nothing is copied until a caller copies what it has checked. Without one (or misaligned), the
// storages are copies, which add up to no more than the file: no two records overlap.
ValuePtr decode_torch_file(std::string_view bytes, std::shared_ptr<const void> owner = nullptr);

}  // namespace dptrain::serialize
