#include "support/models.h"

#include <mutex>

#include "model/registry.h"

namespace dptrain::testing {

torch::nn::AnyModule float64_lenet() {
  static std::mutex draw;
  const std::lock_guard<std::mutex> lock(draw);
  torch::manual_seed(7);
  config::ModelConfig config;
  config.init_std = 0.1;
  torch::nn::AnyModule model = model::make_model(config);
  model.ptr()->to(torch::kFloat64);
  return model;
}

}  // namespace dptrain::testing
