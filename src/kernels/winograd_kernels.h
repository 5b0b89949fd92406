// Winograd's F(2x2, 3x3) for 3x3 convolutions of stride 1 and padding 1 on a CPU, on raw
// channels-last floats: each 2x2 block of outputs (a tile) comes from a 4x4 patch of the input in
// 16 products instead of 36, so the multiplications of a 3x3 convolution fall 2.25-fold and what
// is left is 16 matrix products per block of tiles (one per point of the 4x4 transform), plus the
// transforms. Why not oneDNN's: oneDNN 2.6's Winograd convolution needs AVX-512, and its direct
// convolutions bound ResNet-18 to 1.13x d2l's code (docs/performance.md, "ResNet-18 on a CPU").
// The same kernels give the input gradient (a convolution of the output gradient with the kernel
// turned and transposed) and the weight gradient (the products' gradient in the transform's
// domain, taken back through the weights' transform). Results depend on neither the thread count
// nor the blocks' split between threads. They are rounded otherwise than a direct convolution's:
// the transforms add and subtract a tile's inputs before the products and take the sums apart
// after, so an output's error scales with the largest values of its tile's 4x4 patch, not with
// its own 3x3 inputs (an output beside activations 1e5 times its size can lose 2 to 3 digits), and
// values over about 1e37 overflow where a direct convolution's would not. In the forward pass a
// non-finite input reaches the outputs a direct convolution's would and no others (an infinity
// may come out NaN); in the gradients it spreads over its tile: an infinite input at an image's
// edge makes all 9 taps of its channel's weight gradient non-finite, not the direct 4 or 6.
#pragma once

#include <cstdint>
#include <vector>

namespace dptrain::kernels {

// Output channels are computed 16 at a time: a convolution's input and output channels must both
// be multiples of this (the input gradient swaps them).
constexpr int64_t kWinogradChannelStep = 16;

// Images of height x width pixels, in tiles of 2x2 outputs (the last row and column of tiles may
// hang over the edge).
struct WinogradShape {
  int64_t images, height, width;
  int64_t tiles_high() const { return (height + 1) / 2; }
  int64_t tiles_wide() const { return (width + 1) / 2; }
  int64_t tiles() const { return images * tiles_high() * tiles_wide(); }
};

// weight [outputs][inputs][3][3] (contiguous) in the transform's domain, laid out for
// winograd_convolution. With `for_input_grad` the kernel is turned by 180 degrees and its two
// channel dimensions swapped: the weights that give the input gradient from the output gradient.
std::vector<float> winograd_weights(const float* weight, int64_t outputs, int64_t inputs,
                                    bool for_input_grad);

// y [images][height][width][outputs] = the convolution of x [images][height][width][inputs] with
// weights from winograd_weights, plus bias[outputs] where bias is not null.
void winograd_convolution(const float* x, const WinogradShape& shape, int64_t inputs,
                          const std::vector<float>& weights, int64_t outputs, const float* bias,
                          float* y);

// weight_grad [outputs][inputs][3][3] = d(loss)/d(weight) of that convolution, given x and grad
// [images][height][width][outputs] = d(loss)/dy.
void winograd_weight_grad(const float* x, const float* grad, const WinogradShape& shape,
                          int64_t inputs, int64_t outputs, float* weight_grad);

}  // namespace dptrain::kernels
