// The weight and bias gradients of a stride-1, unpadded convolution on a CPU, as a kernel of our
// own. Why not oneDNN's: for LeNet's conv2 (20 -> 50 channels, 5x5, on 13x13) it ran at 115
// GFLOP/s on an AVX2 dev machine, against 159 for the same convolution's forward
// (docs/performance.md). Here the weights' packed layout (kernels/conv_geometry.h) makes a kernel
// row of an output channel one contiguous strip of the channels-last input, so each tile of 3
// output channels x 4 vectors of the strip sums gradient x input over an image's pixels in
// registers.
// The result does not depend on the thread count: images are summed in fixed blocks, and the
// blocks are added in order.
#pragma once

#include <torch/torch.h>

#include <utility>

namespace dptrain::kernels {

// The name the kernel runs under for profilers.
constexpr const char* kConvWeightGradOp = "dptrain::conv_weight_grad";

// True when conv_weight_grad() takes these: what conv_input_grad_applies() takes, for an input
// of input.sizes() that is an fp32 CPU tensor.
bool conv_weight_grad_applies(const torch::Tensor& grad_output, const torch::Tensor& input,
                              const torch::Tensor& weight);

// d(loss)/d(weight) [C_out, C_in, KH, KW] and d(loss)/d(bias) [C_out] of conv2d(input, weight,
// bias) with stride 1 and no padding, given d(loss)/d(output).
std::pair<torch::Tensor, torch::Tensor> conv_weight_grad(const torch::Tensor& grad_output,
                                                         const torch::Tensor& input,
                                                         const torch::Tensor& weight);

}  // namespace dptrain::kernels
