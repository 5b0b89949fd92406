#include "optim/optimizer.h"

#include <tuple>

namespace dptrain::optim {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const config::OptimizerConfig& c,
                                                        std::vector<torch::Tensor> params) {
  // config validation guarantees two betas.
  const auto betas = std::make_tuple(c.betas.at(0), c.betas.at(1));
  switch (c.name) {
    case config::OptimizerName::kAdam:
      return std::make_unique<torch::optim::Adam>(
          std::move(params),
          torch::optim::AdamOptions(c.lr).betas(betas).eps(c.eps).weight_decay(c.weight_decay));
    case config::OptimizerName::kAdamw:
      return std::make_unique<torch::optim::AdamW>(
          std::move(params),
          torch::optim::AdamWOptions(c.lr).betas(betas).eps(c.eps).weight_decay(c.weight_decay));
    case config::OptimizerName::kSgd:
      break;
  }
  return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(c.lr)
                                                                    .momentum(c.momentum)
                                                                    .nesterov(c.nesterov)
                                                                    .weight_decay(c.weight_decay));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace dptrain::optim
