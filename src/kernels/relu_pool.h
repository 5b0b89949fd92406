// ReLU then 2x2 average pooling of a channels-last CPU activation, forward and backward, each as
// one pass of our own. Why: LibTorch 1.13 runs them as two ops each way, and its channels-last
// avg_pool2d and its backward were measured at about 1.9 ms a step of LeNet's second block
// (docs/performance.md), with a zero-fill and a layout copy on the way back. The results are
// LibTorch's bit for bit: ReLU is exact, the four inputs are added in avg_pool2d's order and
// divided by 4 exactly, and backward hands each input its output's gradient / 4 where ReLU let
// it through.
#pragma once

#include <torch/torch.h>

namespace dptrain::kernels {

// True when relu_avg_pool2() computes this: a 4-d fp32 CPU tensor of at least 2x2 pixels.
bool relu_avg_pool2_applies(const torch::Tensor& x);

// avg_pool2d(relu(x), 2), channels-last, differentiable in x. Only where relu_avg_pool2_applies().
torch::Tensor relu_avg_pool2(const torch::Tensor& x);

}  // namespace dptrain::kernels
