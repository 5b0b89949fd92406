// torch.save archives changed by hand, record by record: a damaged pickle for the fuzzing
// regressions, and files as a GPU run writes them, made without a GPU (PyTorch's torch.save
// records each storage's device, "cuda:0", where dptrain writes "cpu"; whoever loads the file
// must place each tensor by its own model's devices).
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace dptrain::testing {

// The archive `archive` (its bytes) written again with `edit` applied to its data.pkl record.
std::string edit_data_pkl(const std::string& archive,
                          const std::function<void(std::string& pickle)>& edit);

// Copies the torch.save archive `from` to `to` (as dptrain writes it: no memoized texts) with every
// storage's location set to `location` (such as "cuda:1"); returns how many it changed.
int relocate_storages(const std::filesystem::path& from, const std::filesystem::path& to,
                      const std::string& location);

}  // namespace dptrain::testing
