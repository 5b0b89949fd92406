#include "support/models.h"

#include <mutex>

#include "model/registry.h"

namespace dptrain::testing {

namespace {

torch::nn::AnyModule seeded_lenet(torch::Dtype dtype) {
  static std::mutex draw;
  const std::lock_guard<std::mutex> lock(draw);
  torch::manual_seed(7);
  config::ModelConfig config;
  config.init_std = 0.1;
  torch::nn::AnyModule model = model::make_model(config);
  model.ptr()->to(dtype);
  return model;
}

}  // namespace

torch::nn::AnyModule float64_lenet() {
  return seeded_lenet(torch::kFloat64);
}

torch::nn::AnyModule float32_lenet() {
  return seeded_lenet(torch::kFloat32);
}

}  // namespace dptrain::testing
