// Pillow's bilinear resize of an 8-bit grey image, as torchvision's Resize((h, w)) calls it on a
// PIL image: an antialiasing triangle filter widened by the scale when shrinking, coefficients in
// 22-bit fixed point, a horizontal pass rounded to 8 bits, then a vertical one. Done the same
// way here so that `dptrain predict` feeds the model the very pixels a Python user's transform
// gives (tests/data/image_file_test.cpp holds it to torchvision's output).
#pragma once

#include <torch/torch.h>

namespace dptrain::data {

// grey: uint8 [h, w] -> uint8 [height, width].
torch::Tensor pil_bilinear_resize(const torch::Tensor& grey, int64_t height, int64_t width);

}  // namespace dptrain::data
