// Every difference between the LibTorch versions dptrain builds against (Debian's 1.13 and the
// 2.x of official and pip builds) lives here, so that the rest of the code reads the same on both.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <string>

namespace dptrain::core::compat {

inline std::string libtorch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// Both versions have c10::InferenceMode; the alias keeps call sites independent of its home.
using InferenceGuard = c10::InferenceMode;

}  // namespace dptrain::core::compat
