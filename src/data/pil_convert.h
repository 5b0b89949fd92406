// PIL's Image.convert("L") and convert("RGB") on 8-bit pixels, as ImageFolder's loader applies
// them to every picture it opens: grey from colour by ITU-R 601-2 luma in PIL's fixed point, grey
// to colour by copying, and alpha dropped (never blended), as PIL drops it.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace dptrain::data {

// `pixels`: height x width pixels of `in` interleaved channels (1 grey, 2 grey and alpha, 3 RGB,
// 4 RGBA). Returns uint8 [height, width, out], out 1 or 3.
torch::Tensor pil_convert(const uint8_t* pixels, int64_t height, int64_t width, int in, int out);

}  // namespace dptrain::data
