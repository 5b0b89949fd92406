// The shape of a stride-1, unpadded convolution as dptrain's own gradient kernels see it
// (kernels/conv_input_grad.h, kernels/conv_weight_grad.h), and the packed weight layout they share:
// for one kernel row, the kernel's columns times the input channels are one contiguous strip of a
// channels-last input (kernel_w x in_channels floats from pixel (row, column) on), so a kernel
// row of output channel o is one such strip, padded to whole vectors.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace dptrain::kernels {

struct ConvGeometry {
  int64_t images, in_channels, out_channels;
  int64_t kernel_h, kernel_w, out_h, out_w, in_h, in_w;
  int64_t strip;   // kernel_w x in_channels
  int64_t padded;  // strip rounded up to kLanes (kernels/lanes.h)
  int64_t vectors() const;
  int64_t pixels() const { return out_h * out_w; }
  int64_t image_floats() const { return in_h * in_w * in_channels; }
  // Packed weights: [kernel_h][out_channels][padded].
  int64_t packed_floats() const { return kernel_h * out_channels * padded; }
  int64_t packed_row(int64_t kh, int64_t o) const { return (kh * out_channels + o) * padded; }
  // Where the strip of output pixel (oh, ow) under kernel row kh starts in its image.
  int64_t strip_at(int64_t oh, int64_t ow, int64_t kh) const {
    return ((oh + kh) * in_w + ow) * in_channels;
  }
};

// grad_output [N, C_out, H_out, W_out] and weight [C_out, C_in, KH, KW].
ConvGeometry conv_geometry(const torch::Tensor& grad_output, const torch::Tensor& weight);

// weight [C_out, C_in, KH, KW] in the packed layout, zeros after each strip.
std::vector<float> pack_conv_weights(const torch::Tensor& weight, const ConvGeometry& g);

// The packed layout back to a [C_out, C_in, KH, KW] tensor (the padding dropped).
torch::Tensor unpack_conv_weights(const float* packed, const ConvGeometry& g);

}  // namespace dptrain::kernels
