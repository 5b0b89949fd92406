// Our own autograd Functions compute first derivatives only: their backward passes build no graph.
// LibTorch's C++ API has no once_differentiable, so each backward calls this first, which refuses
// a backward run with create_graph (where grad mode is on) instead of returning a silently wrong
// second derivative.
#pragma once

#include <torch/torch.h>

#include <string>

#include "core/error.h"

namespace dptrain::kernels {

inline void refuse_double_backward(const std::string& what) {
  if (!torch::GradMode::is_enabled()) return;
  throw core::Error(core::ErrorCode::kNotSupported,
                    what + " computes first derivatives only (a backward with create_graph)",
                    "run the model on another device or dtype, where LibTorch's own ops run, for "
                    "higher derivatives");
}

}  // namespace dptrain::kernels
