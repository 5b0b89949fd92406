// d2l §13.5's LeNet variant for 28x28 images: conv C->20 3x3, ReLU, avg-pool 2; conv 20->50 5x5,
// ReLU, avg-pool 2; flatten (800); linear 800->128, ReLU; linear 128->classes (d2l: C 1, 10
// classes, 129,068 parameters). Weights ~ N(0, init_std^2), biases zero, as d2l initialises them.
#pragma once

#include <torch/torch.h>

namespace dptrain::model {

class LeNetImpl : public torch::nn::Cloneable<LeNetImpl> {
 public:
  explicit LeNetImpl(double init_std = 0.01, int64_t in_channels = 1, int64_t classes = 10);

  void reset() override;  // builds the layers and draws the initial weights
  torch::Tensor forward(torch::Tensor x);

 private:
  double init_std_;
  int64_t in_channels_;
  int64_t classes_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
};
TORCH_MODULE(LeNet);

}  // namespace dptrain::model
