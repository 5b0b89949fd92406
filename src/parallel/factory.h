// Builds the backend that `parallel.backend` names, around a freshly initialised model.
#pragma once

#include <memory>

#include "config/config.h"
#include "parallel/backend.h"

namespace dptrain::parallel {

std::unique_ptr<Backend> make_backend(const config::ParallelConfig& config,
                                      torch::nn::AnyModule model);

}  // namespace dptrain::parallel
