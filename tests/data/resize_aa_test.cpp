// dptrain's uint8 antialiased resize (data/resize_aa.h) against LibTorch's own float path, which
// torchvision's tensor resize runs (tests/data/transforms_test.cpp compares with torchvision
// itself): real Fashion-MNIST pictures, grey and as the channels of a colour one, enlarged,
// shrunk, stretched one way and squeezed the other, and cut as random resized crops are. Each
// within one grey level, and hardly any differing at all; halves rounded to even.
#include "data/resize_aa.h"

#include <array>

#include "data/image_dataset.h"
#include "support/catch.h"
#include "support/fixtures.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

// LibTorch's: the picture as float32 through _upsample_bilinear2d_aa, rounded back.
torch::Tensor libtorch_resize(const torch::Tensor& image, int64_t height, int64_t width) {
  const torch::Tensor y =
      at::_upsample_bilinear2d_aa(image.to(torch::kFloat32).unsqueeze(0), {height, width},
                                  /*align_corners=*/false, c10::nullopt, c10::nullopt);
  return y.squeeze(0).round().to(torch::kUInt8);
}

}  // namespace

TEST_CASE(
    "the uint8 antialiased resize is LibTorch's float one within a grey level, on real pictures "
    "of every shape it meets",
    "[data][transforms]") {
  TempDir dir;
  write_real_subset(dir / "idx", 12, 0);
  const auto real = data::ImageDataset::from_idx_files(
      dir / "idx" / "train-images-idx3-ubyte.gz", dir / "idx" / "train-labels-idx1-ubyte.gz", 10);
  std::vector<torch::Tensor> pictures;
  for (int64_t k = 0; k < 4; ++k) {
    pictures.push_back(real.raw_sample(k).pixels);
    pictures.push_back(torch::cat(
        {real.raw_sample(4 + k).pixels, real.raw_sample(8 + k).pixels, real.raw_sample(k).pixels}));
  }
  // 96x96 versions too, the size d2l's ResNet-18 takes, to shrink and cut from.
  const size_t originals = pictures.size();
  for (size_t k = 0; k < originals; ++k) {
    pictures.push_back(libtorch_resize(pictures[k], 96, 96));
  }
  const std::vector<std::array<int64_t, 2>> sizes = {{96, 96}, {40, 36}, {17, 23},   {13, 13},
                                                     {28, 96}, {7, 50},  {224, 224}, {1, 1}};
  int64_t compared = 0, differing = 0;
  double largest = 0;
  for (const torch::Tensor& picture : pictures) {
    // Crops as random resized crops cut them (a corner, the middle, a thin strip), and whole.
    const int64_t h = picture.size(1), w = picture.size(2);
    const std::vector<torch::Tensor> sources = {
        picture, picture.slice(1, 0, h / 2).slice(2, w / 3, w),
        picture.slice(1, h / 4, h - h / 4).slice(2, h / 4, w - h / 4),
        picture.slice(1, 1, h).slice(2, 0, 3)};
    for (const torch::Tensor& source : sources) {
      for (const auto& [oh, ow] : sizes) {
        CAPTURE(source.sizes(), oh, ow);
        const torch::Tensor ours = data::resize_bilinear_aa(source, oh, ow);
        const torch::Tensor theirs = libtorch_resize(source, oh, ow);
        REQUIRE(ours.sizes() == theirs.sizes());
        const torch::Tensor d = (ours.to(torch::kInt32) - theirs.to(torch::kInt32)).abs();
        largest = std::max(largest, d.max().item<double>());
        differing += d.gt(0).sum().item<int64_t>();
        compared += d.numel();
        CHECK(d.max().item<int64_t>() <= 1);
      }
    }
  }
  CHECK(compared > 1'000'000);
  // Where the two differ at all, a sum landed on the other side of a rounding edge: 12 of 8.2
  // million pixels on an AMD EPYC with AVX-512, 747 where one side's sums were not contracted
  // into FMAs and the other's were. A wrong weight or rounding moves far more (a truncation
  // instead of the rounding, about half of them).
  INFO(differing << " of " << compared << " pixels differ, by at most " << largest);
  CHECK(differing * 1'000 < compared);
}

TEST_CASE("the uint8 resize rounds halves to even, as torch.round does", "[data][transforms]") {
  // Two pixels shrunk to one: each weighs a half, so the sum is a half-way value.
  for (const auto& [left, right, expected] :
       {std::array<int, 3>{1, 2, 2}, {2, 3, 2}, {4, 5, 4}, {254, 255, 254}, {0, 1, 0}}) {
    const torch::Tensor pair =
        torch::tensor({left, right}, torch::kInt32).to(torch::kUInt8).view({1, 1, 2});
    CAPTURE(left, right);
    CHECK(data::resize_bilinear_aa(pair, 1, 1).item<int>() == expected);
    CHECK(libtorch_resize(pair, 1, 1).item<int>() == expected);
  }
}
