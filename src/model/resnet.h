// d2l §13.6's "slightly modified ResNet-18", for images of any channels and size: a 3x3 stem
// convolution (64 channels, stride 1, padding 1) with BatchNorm and ReLU and no max-pool; four
// stages of two residual blocks (64, 128, 256, 512 channels; stages 2-4 halve the size in their
// first block, whose shortcut is a strided 1x1 convolution); global average pooling; a linear
// layer to the classes. d2l's (1 channel, 10 classes): 11,175,818 parameters and 7,825 buffer
// elements. Modules are named by d2l's
// nn.Sequential ("0", "1", "resnet_block1.0.conv1", ..., "fc.1"), so that model.pt's keys are its
// state_dict's. Initialised as d2l's train(): conv and linear weights ~ N(0, init_std^2); biases as
// PyTorch draws them; BatchNorm weight 1, bias 0.
#pragma once

#include <torch/torch.h>

#include "model/batch_norm.h"

namespace dptrain::model {

// d2l.Residual: conv3x3-BN-ReLU-conv3x3-BN, plus the input (through a 1x1 convolution where the
// shape changes), then ReLU.
class ResidualImpl : public torch::nn::Cloneable<ResidualImpl> {
 public:
  ResidualImpl(int64_t in_channels, int64_t channels, bool use_1x1conv, int64_t stride);

  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t in_channels_, channels_, stride_;
  bool use_1x1conv_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
};
TORCH_MODULE(Residual);

class ResNet18Impl : public torch::nn::Cloneable<ResNet18Impl> {
 public:
  explicit ResNet18Impl(double init_std = 0.01, int64_t classes = 10, int64_t in_channels = 1);

  void reset() override;
  torch::Tensor forward(torch::Tensor x);

 private:
  double init_std_;
  int64_t classes_;
  int64_t in_channels_;
  torch::nn::Conv2d stem_conv_{nullptr};
  BatchNorm2d stem_bn_{nullptr};
  torch::nn::Sequential stages_[4];
  torch::nn::Sequential fc_{nullptr};
};
TORCH_MODULE(ResNet18);

}  // namespace dptrain::model
