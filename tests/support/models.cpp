#include "support/models.h"

#include <mutex>

#include "model/registry.h"
#include "model/resnet.h"

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

class SmallResNetImpl : public torch::nn::Cloneable<SmallResNetImpl> {
 public:
  SmallResNetImpl() { reset(); }
  void reset() override {
    namespace nn = torch::nn;
    conv_ = register_module("0", nn::Conv2d(nn::Conv2dOptions(1, 4, 3).stride(2).padding(1)));
    bn_ = register_module("1", model::BatchNorm2d(4));
    block_ = register_module("2", model::Residual(4, 8, /*use_1x1conv=*/true, /*stride=*/2));
    fc_ = register_module("3", nn::Linear(8, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor y = block_->forward(torch::relu(bn_->forward(conv_->forward(x))));
    return fc_->forward(torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1));
  }

 private:
  torch::nn::Conv2d conv_{nullptr};
  model::BatchNorm2d bn_{nullptr};
  model::Residual block_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(SmallResNet);

}  // namespace

torch::nn::AnyModule float64_small_resnet() {
  static std::mutex draw;
  const std::lock_guard<std::mutex> lock(draw);
  torch::manual_seed(7);
  torch::nn::AnyModule model(SmallResNet{});
  model.ptr()->to(torch::kFloat64);
  return model;
}

torch::nn::AnyModule float64_lenet() {
  return seeded_lenet(torch::kFloat64);
}

torch::nn::AnyModule float32_lenet() {
  return seeded_lenet(torch::kFloat32);
}

}  // namespace dptrain::testing
