// torch.save archives changed by hand, record by record: a damaged pickle for the fuzzing
// regressions, and files as a GPU run writes them, made without a GPU (PyTorch's torch.save
// records each storage's device, "cuda:0", where dptrain writes "cpu"; whoever loads the file
// must place each tensor by its own model's devices).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace dptrain::testing {

// A pickled text as dptrain's writer puts it: BINUNICODE, 4 bytes of length, the text.
std::string binunicode(const std::string& text);
// A pickle stream by hand: PROTO 2, the given opcodes, STOP.
std::string pickle_stream(const std::string& body);

// The archive `archive` (its bytes) written again with `edit` applied to its data.pkl record.
std::string edit_data_pkl(const std::string& archive,
                          const std::function<void(std::string& pickle)>& edit);

// Copies the torch.save archive `from` to `to` (as dptrain writes it: no memoized texts) with every
// storage's location set to `location` (such as "cuda:1"); returns how many it changed.
int relocate_storages(const std::filesystem::path& from, const std::filesystem::path& to,
                      const std::string& location);

// A record of a hand-made zip archive: its name under the archive's folder, and either its bytes
// or, when `zeros` is set, that many zero bytes left as a hole in the file (a sparse record that
// costs no disk, with its true CRC-32).
struct StoredRecord {
  std::string name;
  std::string bytes;
  uint64_t zeros = 0;
};

// Writes a zip archive of stored records, as torch.save lays them out (under "archive/"), with no
// zip64 fields (every record under 4 GB).
void write_stored_zip(const std::filesystem::path& path, const std::vector<StoredRecord>& records);

}  // namespace dptrain::testing
