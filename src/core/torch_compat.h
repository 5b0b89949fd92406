// Every difference between the LibTorch versions dptrain builds against (Debian's 1.13 and the
// 2.x of official and pip builds) lives here, so that the rest of the code reads the same on both.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <string>

namespace c10d {
class Backend;
class ProcessGroup;
}  // namespace c10d

namespace dptrain::core::compat {

inline std::string libtorch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// Both versions have c10::InferenceMode; the alias keeps call sites independent of its home.
using InferenceGuard = c10::InferenceMode;

// The class that ProcessGroupGloo and ProcessGroupNCCL derive from, which declares the collectives:
// c10d::ProcessGroup in 1.13; since 2.0 a ProcessGroup dispatches to c10d::Backend objects.
#if TORCH_VERSION_MAJOR >= 2
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

}  // namespace dptrain::core::compat
