#include "data/pil_resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dptrain::data {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's, for 8-bit images

// For each output position: the first input position it reads and its fixed-point weights.
struct Coefficients {
  std::vector<int64_t> first;
  std::vector<std::vector<int64_t>> weights;
};

// Pillow's precompute_coeffs with the bilinear (triangle) filter, then normalize_coeffs_8bpc.
Coefficients coefficients(int64_t in_size, int64_t out_size) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;
  Coefficients c;
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    const auto xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const auto xmax = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size);
    std::vector<double> k;
    double total = 0;
    for (int64_t x = xmin; x < xmax; ++x) {
      const double t = std::abs((static_cast<double>(x) - center + 0.5) / filter_scale);
      k.push_back(t < 1.0 ? 1.0 - t : 0.0);
      total += k.back();
    }
    std::vector<int64_t> fixed;
    for (double w : k) {
      const double v = (total != 0 ? w / total : w) * (1 << kPrecisionBits);
      fixed.push_back(static_cast<int64_t>(v < 0 ? std::trunc(-0.5 + v) : std::trunc(0.5 + v)));
    }
    c.first.push_back(xmin);
    c.weights.push_back(std::move(fixed));
  }
  return c;
}

uint8_t clip8(int64_t v) {
  if (v >= (int64_t{256} << kPrecisionBits)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

// One pass along the last dimension of [rows, in] -> [rows, out].
torch::Tensor resample_rows(const torch::Tensor& in, int64_t out_size) {
  const int64_t rows = in.size(0), in_size = in.size(1);
  const Coefficients c = coefficients(in_size, out_size);
  torch::Tensor out = torch::empty({rows, out_size}, torch::kUInt8);
  const uint8_t* src = in.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t xx = 0; xx < out_size; ++xx) {
      int64_t sum = int64_t{1} << (kPrecisionBits - 1);
      const auto& k = c.weights[xx];
      for (size_t i = 0; i < k.size(); ++i) sum += src[r * in_size + c.first[xx] + i] * k[i];
      dst[r * out_size + xx] = clip8(sum);
    }
  }
  return out;
}

}  // namespace

torch::Tensor pil_bilinear_resize(const torch::Tensor& grey, int64_t height, int64_t width) {
  torch::Tensor image = grey.contiguous();
  if (image.size(1) != width) image = resample_rows(image, width);  // horizontal first
  if (image.size(0) != height) image = resample_rows(image.t().contiguous(), height).t();
  return image.contiguous();
}

}  // namespace dptrain::data
