#include "model/lenet.h"

#include "kernels/cpu_kernels.h"
#include "kernels/fused_input_block.h"
#include "kernels/relu_pool.h"

namespace dptrain::model {

LeNetImpl::LeNetImpl(double init_std, int64_t in_channels, int64_t classes)
    : init_std_(init_std), in_channels_(in_channels), classes_(classes) {
  reset();
}

void LeNetImpl::reset() {
  namespace nn = torch::nn;
  // Named by their places in d2l's nn.Sequential (0 conv, 1 ReLU, 2 pool, 3 conv, 4 ReLU, 5 pool,
  // 6 flatten, 7 linear, 8 ReLU, 9 linear), so that model.pt's keys are its state_dict's.
  conv1_ = register_module("0", nn::Conv2d(nn::Conv2dOptions(in_channels_, 20, /*kernel_size=*/3)));
  conv2_ = register_module("3", nn::Conv2d(nn::Conv2dOptions(20, 50, /*kernel_size=*/5)));
  fc1_ = register_module("7", nn::Linear(800, 128));
  fc2_ = register_module("9", nn::Linear(128, classes_));
  torch::NoGradGuard no_grad;
  for (auto& param : named_parameters()) {
    if (param.key().find("bias") != std::string::npos) {
      param.value().zero_();
    } else {
      param.value().normal_(/*mean=*/0.0, /*std=*/init_std_);
    }
  }
}

torch::Tensor LeNetImpl::forward(torch::Tensor x) {
  if (kernels::fused_input_block_applies(x, conv1_->weight, conv1_->bias)) {
    x = kernels::fused_input_block(x, conv1_->weight, conv1_->bias);
  } else {
    x = torch::avg_pool2d(torch::relu(kernels::conv2d(x, conv1_->weight, conv1_->bias)),
                          /*kernel_size=*/2);
  }
  x = kernels::conv2d(x, conv2_->weight, conv2_->bias);
  x = kernels::relu_avg_pool2_applies(x) ? kernels::relu_avg_pool2(x)
                                         : torch::avg_pool2d(torch::relu(x), 2);
  x = x.flatten(/*start_dim=*/1);  // (channel, row, column) order, whatever the memory layout
  x = torch::relu(kernels::dense(x, fc1_->weight, fc1_->bias));
  return kernels::dense(x, fc2_->weight, fc2_->bias);
}

}  // namespace dptrain::model
