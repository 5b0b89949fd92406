// Files as a GPU run writes them, made without a GPU: PyTorch's torch.save (and a CUDA build of
// dptrain's writer, were it to keep the location) records each storage's device, "cuda:0", where
// dptrain writes "cpu". Whoever loads the file must place each tensor by its own model's devices.
#pragma once

#include <filesystem>
#include <string>

namespace dptrain::testing {

// Copies the torch.save archive `from` to `to` (as dptrain writes it: no memoized texts) with every
// storage's location set to `location` (such as "cuda:1"); returns how many it changed.
int relocate_storages(const std::filesystem::path& from, const std::filesystem::path& to,
                      const std::string& location);

}  // namespace dptrain::testing
