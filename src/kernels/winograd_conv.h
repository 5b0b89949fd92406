// 3x3 convolutions of stride 1 and padding 1 (ResNet-18's, but for its stem and its strided
// ones) through dptrain's Winograd kernels on CPUs, forward and both gradients
// (kernels/winograd_kernels.h says how and why). Activations come out channels-last; parameters
// keep the standard layout.
#pragma once

#include <torch/torch.h>

namespace dptrain::kernels {

// The names the three passes run under for profilers.
constexpr const char* kWinogradConvOp = "dptrain::winograd_conv";
constexpr const char* kWinogradInputGradOp = "dptrain::winograd_input_grad";
constexpr const char* kWinogradWeightGradOp = "dptrain::winograd_weight_grad";

// True when winograd_conv() takes these: fp32 CPU tensors outside CPU autocast, x [N, C, H, W]
// with N > 0, weight [K, C, 3, 3], C and K multiples of 16, bias [K] or undefined, for a
// convolution of stride 1, padding 1, dilation 1 and one group (the caller's to check).
bool winograd_conv_applies(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias);

// torch::conv2d(x, weight, bias, /*stride=*/1, /*padding=*/1), differentiable in all three.
torch::Tensor winograd_conv(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias);

}  // namespace dptrain::kernels
