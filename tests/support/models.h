// Models the tests train in float64, so that what is left between two ways of training is theirs,
// not float32 rounding.
#pragma once

#include <torch/torch.h>

namespace dptrain::testing {

// LeNet in float64 with weights ~ N(0, 0.1²) drawn under seed 7: the same model on every call, on
// any thread (draws from the global generator take turns). The large init_std gives gradients
// large enough that a wrong sum shows.
torch::nn::AnyModule float64_lenet();
// The same LeNet in float32, as dptrain trains it (ZeRO's bit-for-bit tests).
torch::nn::AnyModule float32_lenet();
// A small network of dptrain's BatchNorm blocks in float64, drawn under seed 7: a strided conv
// 1->4 with BatchNorm and ReLU, one residual block 4->8 (stride 2, 1x1 shortcut: three convs,
// two BatchNorms), global average pooling, linear 8->10. ResNet-18's parts at a test's cost.
torch::nn::AnyModule float64_small_resnet();

}  // namespace dptrain::testing
