// The input gradient of a stride-1, unpadded convolution on a CPU, as a kernel of our own. Why not
// oneDNN's: LeNet's conv2 (20 -> 50 channels, 5x5, on 13x13) spent more time in this one primitive
// than in any other, at 92 GFLOP/s on an AVX2 dev machine against 159 for the same convolution's
// forward (137 against 157 on an AVX-512 one; docs/performance.md). Here each output pixel's
// gradient row is spread over the input's channels-last pixels it came from: for one kernel row,
// the kernel's columns times the input channels are one contiguous strip of the input (100 floats
// for conv2), summed in vector registers over the output channels and added once to the strip.
// Each image is computed on its own in a fixed order, so the result does not depend on the thread
// count or on how a batch is split between replicas.
#pragma once

#include <torch/torch.h>

namespace dptrain::kernels {

// The name the kernel runs under for profilers.
constexpr const char* kConvInputGradOp = "dptrain::conv_input_grad";

// True when conv_input_grad() takes these: fp32 CPU tensors, grad_output [N, C_out, H_out, W_out]
// and weight [C_out, C_in, KH, KW], input_size {N, C_in, H_out + KH - 1, W_out + KW - 1}, an
// input image of at most 64 Ki values (where the kernel's sums stay in the L2 cache).
bool conv_input_grad_applies(const torch::Tensor& grad_output, const torch::Tensor& weight,
                             torch::IntArrayRef input_size);

// d(loss)/d(input) of conv2d(input, weight) with stride 1 and no padding, given d(loss)/d(output):
// what at::convolution_backward's first output is, channels-last, summed in another order.
torch::Tensor conv_input_grad(const torch::Tensor& grad_output, const torch::Tensor& weight,
                              torch::IntArrayRef input_size);

}  // namespace dptrain::kernels
