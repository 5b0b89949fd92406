#include "data/resize_aa.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/vector_clones.h"

namespace dptrain::data {
namespace {

// For each output position of one axis, the first input position it reads, how many, and their
// weights (`taps` a position, zeros after `count`).
struct AxisWeights {
  std::vector<int64_t> first, count;
  std::vector<float> weights;
  int64_t taps = 0;
};

float triangle(float x) {
  if (x < 0) x = -x;
  return x < 1 ? 1 - x : 0;
}

// The expressions and their types are LibTorch's (float scalars, double literals), so that the
// weights come out the same floats.
AxisWeights axis_weights(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float support = scale >= 1.0 ? (2 * 0.5) * scale : 2 * 0.5;
  const float invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  AxisWeights a;
  a.taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  a.first.resize(static_cast<size_t>(out));
  a.count.resize(static_cast<size_t>(out));
  a.weights.assign(static_cast<size_t>(out * a.taps), 0.0f);
  for (int64_t i = 0; i < out; ++i) {
    const float center = scale * (i + 0.5);
    const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
    const int64_t xsize = std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin;
    float* w = a.weights.data() + i * a.taps;
    float total = 0.0;
    for (int64_t j = 0; j < xsize && j < a.taps; ++j) {
      w[j] = triangle((j + xmin - center + 0.5) * invscale);
      total += w[j];
    }
    const int64_t n = std::min(xsize, a.taps);
    for (int64_t j = 0; j < n; ++j) {
      if (total != 0.0) w[j] /= total;
    }
    a.first[static_cast<size_t>(i)] = xmin;
    a.count[static_cast<size_t>(i)] = std::max<int64_t>(n, 0);
  }
  return a;
}

// A buffer of floats left uninitialized: every one is written before it is read.
class Floats {
 public:
  explicit Floats(int64_t n) : values_(new float[static_cast<size_t>(n)]) {}
  float* data() { return values_.get(); }
  const float* data() const { return values_.get(); }

 private:
  std::unique_ptr<float[]> values_;
};

// `rows` x `cols` floats into `cols` x `rows`.
[[gnu::always_inline]] inline void transpose(const float* in, int64_t rows, int64_t cols,
                                             float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t q = 0; q < cols; ++q) out[q * rows + r] = in[r * cols + q];
  }
}

// Output line i (of `lines`) of one plane: input lines a.first[i].. (each `length` floats, one
// after the other) weighted and summed, first term first. Inlined into the vector clones below,
// whose loops over a line vectorize and contract each step into an FMA where the CPU has one, as
// LibTorch's AVX2 and AVX-512 kernels do.
[[gnu::always_inline]] inline void sum_lines(const float* in, int64_t length, const AxisWeights& a,
                                             int64_t lines, float* out) {
  for (int64_t i = 0; i < lines; ++i) {
    const float* weights = a.weights.data() + i * a.taps;
    const float* first = in + a.first[static_cast<size_t>(i)] * length;
    const int64_t count = a.count[static_cast<size_t>(i)];
    float* line = out + i * length;
    for (int64_t x = 0; x < length; ++x) line[x] = count > 0 ? first[x] * weights[0] : 0.0f;
    for (int64_t j = 1; j < count; ++j) {
      const float* row = first + j * length;
      const float wj = weights[j];
      for (int64_t x = 0; x < length; ++x) line[x] += row[x] * wj;
    }
  }
}

}  // namespace

DPTRAIN_VECTOR_CLONES
torch::Tensor resize_bilinear_aa(const torch::Tensor& image, int64_t height, int64_t width) {
  TORCH_CHECK(image.dim() == 3 && image.scalar_type() == torch::kUInt8,
              "resize_bilinear_aa: a uint8 [C, H, W] image");
  const torch::Tensor src = image.contiguous();
  const int64_t c = src.size(0), h = src.size(1), w = src.size(2);
  // The picture as float32, as torchvision converts it before interpolating.
  Floats plane(c * h * w);
  const uint8_t* __restrict bytes = src.data_ptr<uint8_t>();
  float* __restrict values = plane.data();
  for (int64_t i = 0; i < c * h * w; ++i) values[i] = bytes[i];
  // Along the rows (the contiguous axis) first, when the width changes: on the transposed
  // picture, so that this pass too runs along contiguous memory and vectorizes (each output sums
  // the same terms in the same order as along a row).
  if (width != w) {
    const AxisWeights a = axis_weights(w, width);
    Floats summed(c * width * h);
    {
      Floats across(c * w * h);  // freed before the result takes its place
      for (int64_t k = 0; k < c; ++k) {
        transpose(plane.data() + k * h * w, h, w, across.data() + k * w * h);
      }
      for (int64_t k = 0; k < c; ++k) {
        sum_lines(across.data() + k * w * h, h, a, width, summed.data() + k * width * h);
      }
    }
    plane = Floats(c * h * width);
    for (int64_t k = 0; k < c; ++k) {
      transpose(summed.data() + k * width * h, width, h, plane.data() + k * h * width);
    }
  }
  // Then down the columns, when the height changes.
  if (height != h) {
    const AxisWeights a = axis_weights(h, height);
    Floats columns(c * height * width);
    for (int64_t k = 0; k < c; ++k) {
      sum_lines(plane.data() + k * h * width, width, a, height,
                columns.data() + k * height * width);
    }
    plane = std::move(columns);
  }
  torch::Tensor result = torch::empty({c, height, width}, torch::kUInt8);
  uint8_t* __restrict dst = result.data_ptr<uint8_t>();
  const float* __restrict sums = plane.data();
  for (int64_t i = 0; i < c * height * width; ++i) {
    // torch's round(), half to even, as adding and taking away 1.5 * 2^23 rounds in the default
    // mode (and vectorizes, where std::nearbyint does not); the weights are positive, so only
    // that rounding can leave [0, 255].
    const float rounded = (sums[i] + 12582912.0f) - 12582912.0f;
    dst[i] = static_cast<uint8_t>(std::min(std::max(rounded, 0.0f), 255.0f));
  }
  return result;
}

}  // namespace dptrain::data
