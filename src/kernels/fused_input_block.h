// LeNet's first block, conv2d(one input channel -> C, k x k, stride 1, no padding) + ReLU + 2x2
// average pooling, as one CPU kernel of our own. Why not LibTorch's ops: profiled on the 2-core
// dev machine (docs/performance.md), this block holds 6% of LeNet's FLOPs but took about 40% of a
// training step. oneDNN's convolution runs at 10-20 GFLOP/s with a single input channel, and the
// ReLU, the pooling and the layout conversions each read and write the batch's 13.8 MB activation
// once more, forward and backward. Here each image is read once, the activation stays in
// registers, and backward reads a mask of where ReLU passed (a bit per value).
// The result does not depend on the thread count: the weight gradient is summed per fixed block
// of images and the blocks are added in order.
#pragma once

#include <torch/torch.h>

namespace dptrain::kernels {

// The name the kernel runs under for profilers and for `dptrain info`'s FLOP count
// (model/summary.cpp), which counts 4 convolution outputs per pooled output.
constexpr const char* kFusedInputBlockOp = "dptrain::fused_input_block";

// True when the fused kernel computes this block: fp32 tensors on a CPU, one input channel, a
// square kernel, a bias, an input that needs no gradient (images), and no CPU autocast.
bool fused_input_block_applies(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias);

// avg_pool2d(relu(conv2d(x, weight, bias)), 2), channels-last, differentiable in weight and bias.
// Only where fused_input_block_applies().
torch::Tensor fused_input_block(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias);

}  // namespace dptrain::kernels
