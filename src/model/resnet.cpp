#include "model/resnet.h"

#include <string>

#include "model/winograd_conv.h"

namespace dptrain::model {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2));
}

// The stride-1 3x3 convolutions (88% of the net's multiplications) run in dptrain's Winograd
// kernels where they apply (fp32 on a CPU); the stem, the strided and the 1x1 ones in LibTorch's.
// Every convolution here comes from conv() above: padding kernel / 2, no dilation, one group.
torch::Tensor run(nn::Conv2d& conv, const torch::Tensor& x) {
  const auto& options = conv->options;
  const bool stride_1 = (*options.stride())[0] == 1 && (*options.stride())[1] == 1;
  if (stride_1 && winograd_conv_applies(x, conv->weight, conv->bias)) {
    return winograd_conv(x, conv->weight, conv->bias);
  }
  return conv->forward(x);
}

}  // namespace

ResidualImpl::ResidualImpl(int64_t in_channels, int64_t channels, bool use_1x1conv, int64_t stride)
    : in_channels_(in_channels), channels_(channels), stride_(stride), use_1x1conv_(use_1x1conv) {
  reset();
}

void ResidualImpl::reset() {
  // d2l.Residual's attribute order, which is its state_dict's: conv1, conv2, conv3, bn1, bn2.
  conv1_ = register_module("conv1", conv(in_channels_, channels_, 3, stride_));
  conv2_ = register_module("conv2", conv(channels_, channels_, 3, 1));
  if (use_1x1conv_) conv3_ = register_module("conv3", conv(in_channels_, channels_, 1, stride_));
  bn1_ = register_module("bn1", BatchNorm2d(channels_));
  bn2_ = register_module("bn2", BatchNorm2d(channels_));
}

torch::Tensor ResidualImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = torch::relu(bn1_->forward(run(conv1_, x)));
  y = bn2_->forward(run(conv2_, y));
  return torch::relu(y + (conv3_ ? run(conv3_, x) : x));
}

ResNet18Impl::ResNet18Impl(double init_std, int64_t classes)
    : init_std_(init_std), classes_(classes) {
  reset();
}

void ResNet18Impl::reset() {
  stem_conv_ = register_module("0", conv(1, 64, 3, 1));
  stem_bn_ = register_module("1", BatchNorm2d(64));
  // "2" is the stem's ReLU, which holds nothing.
  const int64_t widths[] = {64, 128, 256, 512};
  int64_t in = 64;
  for (int s = 0; s < 4; ++s) {
    const bool halves = s > 0;  // d2l's first_block keeps the size
    stages_[s] = nn::Sequential(Residual(in, widths[s], halves, halves ? 2 : 1),
                                Residual(widths[s], widths[s], false, 1));
    register_module("resnet_block" + std::to_string(s + 1), stages_[s]);
    in = widths[s];
  }
  // "global_avg_pool" holds nothing; "fc" is nn.Sequential(nn.Flatten(), nn.Linear(512, 10)).
  fc_ = register_module("fc", nn::Sequential(nn::Flatten(), nn::Linear(512, classes_)));
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<nn::Conv2dImpl>()) c->weight.normal_(0.0, init_std_);
    if (auto* l = module->as<nn::LinearImpl>()) l->weight.normal_(0.0, init_std_);
  }
}

torch::Tensor ResNet18Impl::forward(torch::Tensor x) {
  x = torch::relu(stem_bn_->forward(stem_conv_->forward(x)));
  for (auto& stage : stages_) x = stage->forward(x);
  x = torch::adaptive_avg_pool2d(x, {1, 1});
  return fc_->forward(x);
}

}  // namespace dptrain::model
