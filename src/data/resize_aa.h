// The antialiased bilinear resize of a uint8 picture, as torchvision's tensor path computes it:
// torch's _upsample_bilinear2d_aa (align_corners false) on the picture as float32, rounded half
// to even back to uint8. The same triangle filter widened by the scale when shrinking, the same
// weights per output position normalized to one, the same passes (along the rows first, then
// down the columns) and sums, each in float32 in the same order.
// dptrain's own loops rather than LibTorch's: 1.13 has no uint8 kernel (torch 2.1 added one, which
// torchvision v2 uses), and its float path took about 80 us of a 96x96 RGB random resized crop's
// 160 (one thread, an AMD EPYC with AVX-512), in its generic machinery and the conversions
// around it; these take about 20 (a quarter of its instructions under callgrind): both passes run
// along contiguous memory (the first on the transposed picture) in vector clones that contract
// each step into an FMA where the CPU has one, as LibTorch's AVX2 and AVX-512 kernels do. Of
// 8.2 million pixels the test compares, 12 differ from LibTorch's, by one grey level.
// tests/data/resize_aa_test.cpp compares it with LibTorch's on real pictures and many sizes.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace dptrain::data {

// `image` uint8 [C, H, W] (contiguous or not) resized to [C, height, width].
torch::Tensor resize_bilinear_aa(const torch::Tensor& image, int64_t height, int64_t width);

}  // namespace dptrain::data
