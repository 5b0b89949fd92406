// The optimizers an experiment picks by optimizer.name, as LibTorch implements them (the same
// update rules as PyTorch's, checked against PyTorch's own numbers in tests/optim/).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "config/config.h"

namespace dptrain::optim {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const config::OptimizerConfig& config,
                                                        std::vector<torch::Tensor> params);

// Sets every parameter group's learning rate (the schedule's value for the coming step).
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace dptrain::optim
