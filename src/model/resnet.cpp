#include "model/resnet.h"

#include <string>

#include "kernels/winograd_conv.h"

namespace dptrain::model {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2));
}

// conv(), a 3x3 one of stride 1 (so padding 1), in dptrain's Winograd kernels where they apply
// (fp32 on a CPU): 13 of the net's 20 convolutions, 88% of its multiplications. The stem, the
// strided and the 1x1 ones stay LibTorch's. The caller says which conv() made the module: its
// options' padding is a variant whose accessors differ between LibTorch 1.13 and 2.x.
torch::Tensor conv3x3_stride_1(nn::Conv2d& conv, const torch::Tensor& x) {
  if (kernels::winograd_conv_applies(x, conv->weight, conv->bias)) {
    return kernels::winograd_conv(x, conv->weight, conv->bias);
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
  // conv1 is 3x3 with the block's stride, conv2 3x3 with stride 1.
  torch::Tensor y = stride_ == 1 ? conv3x3_stride_1(conv1_, x) : conv1_->forward(x);
  y = torch::relu(bn1_->forward(y));
  y = bn2_->forward(conv3x3_stride_1(conv2_, y));
  return torch::relu(y + (conv3_ ? conv3_->forward(x) : x));
}

ResNet18Impl::ResNet18Impl(double init_std, int64_t classes, int64_t in_channels)
    : init_std_(init_std), classes_(classes), in_channels_(in_channels) {
  reset();
}

void ResNet18Impl::reset() {
  stem_conv_ = register_module("0", conv(in_channels_, 64, 3, 1));
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
  // "global_avg_pool" holds nothing; "fc" is nn.Sequential(nn.Flatten(), nn.Linear(512, classes)).
  fc_ = register_module("fc", nn::Sequential(nn::Flatten(), nn::Linear(512, classes_)));
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<nn::Conv2dImpl>()) c->weight.normal_(0.0, init_std_);
    if (auto* l = module->as<nn::LinearImpl>()) l->weight.normal_(0.0, init_std_);
  }
}

torch::Tensor ResNet18Impl::forward(torch::Tensor x) {
  // The stem's output stays in the standard layout, so that its BatchNorm runs LibTorch's exact
  // kernel: on channels-last tensors it came 2.5e-5 from float64 at batch 256, against 1.1e-7
  // (1.13). The price is the first Winograd convolution's channels-last copy, kept for its
  // backward pass (51 MB at batch 256). The stages' BatchNorms run channels-last, the layout the
  // kernels give.
  x = torch::relu(stem_bn_->forward(stem_conv_->forward(x)));
  for (auto& stage : stages_) x = stage->forward(x);
  x = torch::adaptive_avg_pool2d(x, {1, 1});
  return fc_->forward(x);
}

}  // namespace dptrain::model
