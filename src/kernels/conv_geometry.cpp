#include "kernels/conv_geometry.h"

#include "kernels/lanes.h"

namespace dptrain::kernels {

int64_t ConvGeometry::vectors() const {
  return padded / kLanes;
}

ConvGeometry conv_geometry(const torch::Tensor& grad_output, const torch::Tensor& weight) {
  ConvGeometry g;
  g.images = grad_output.size(0);
  g.out_channels = weight.size(0);
  g.in_channels = weight.size(1);
  g.kernel_h = weight.size(2);
  g.kernel_w = weight.size(3);
  g.out_h = grad_output.size(2);
  g.out_w = grad_output.size(3);
  g.in_h = g.out_h + g.kernel_h - 1;
  g.in_w = g.out_w + g.kernel_w - 1;
  g.strip = g.kernel_w * g.in_channels;
  g.padded = (g.strip + kLanes - 1) / kLanes * kLanes;
  return g;
}

namespace {

// Visits every weight with its offset in the packed layout and in [C_out, C_in, KH, KW].
template <typename Visit>
void for_each_weight(const ConvGeometry& g, Visit visit) {
  for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
    for (int64_t o = 0; o < g.out_channels; ++o) {
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        for (int64_t c = 0; c < g.in_channels; ++c) {
          visit(g.packed_row(kh, o) + kw * g.in_channels + c,
                ((o * g.in_channels + c) * g.kernel_h + kh) * g.kernel_w + kw);
        }
      }
    }
  }
}

}  // namespace

std::vector<float> pack_conv_weights(const torch::Tensor& weight, const ConvGeometry& g) {
  const torch::Tensor w = weight.contiguous();
  const float* src = w.data_ptr<float>();
  std::vector<float> packed(g.packed_floats(), 0.0f);
  for_each_weight(
      g, [&](int64_t at_packed, int64_t at_weight) { packed[at_packed] = src[at_weight]; });
  return packed;
}

torch::Tensor unpack_conv_weights(const float* packed, const ConvGeometry& g) {
  torch::Tensor weight =
      torch::empty({g.out_channels, g.in_channels, g.kernel_h, g.kernel_w}, torch::kFloat32);
  float* dst = weight.data_ptr<float>();
  for_each_weight(
      g, [&](int64_t at_packed, int64_t at_weight) { dst[at_weight] = packed[at_packed]; });
  return weight;
}

}  // namespace dptrain::kernels
