// torchvision's transforms on one image tensor [C, H, W] (uint8 as decoded, or float once
// normalized), each as torchvision.transforms.v2.functional computes it on a tensor: crops, pads
// and flips index the same pixels; resize is the same bilinear interpolation (antialiased by
// default, as v2's), rounded to uint8 as torchvision rounds it; normalize the same float32 sums.
// The random ones draw their parameters as torchvision's get_params/make_params do, from a
// generator of the sample's own (sample_generator): each sample's draws follow from the seed,
// the epoch and its index alone, never from which thread or rank reaches it first.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <vector>

#include "config/transforms.h"

namespace dptrain::data {

// A CPU generator seeded from (seed, epoch, index): torch.manual_seed(sample_seed(...)) gives
// Python the same draws.
uint64_t sample_seed(int64_t seed, int64_t epoch, int64_t index);
at::Generator sample_generator(int64_t seed, int64_t epoch, int64_t index);

struct CropBox {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
};

// The output size of resize: [side] sets the shorter edge, keeping the aspect as torchvision
// truncates it; [h, w] is itself.
std::array<int64_t, 2> resized_size(int64_t height, int64_t width,
                                    const std::vector<int64_t>& size);
torch::Tensor resize(const torch::Tensor& image, const std::vector<int64_t>& size, bool antialias);
// Pixels outside the image are zeros, as F.crop pads them.
torch::Tensor crop(const torch::Tensor& image, const CropBox& box);
torch::Tensor center_crop(const torch::Tensor& image, const std::vector<int64_t>& size);
// Where index i (from -before to n + after) of an axis of n padded in `mode` (edge, reflect or
// symmetric; within what pad allows) reads.
int64_t padded_source_index(int64_t i, int64_t n, const std::string& mode);
// [left, top, right, bottom]; mode constant (fill), edge, reflect or symmetric.
torch::Tensor pad(const torch::Tensor& image, const std::array<int64_t, 4>& padding, double fill,
                  const std::string& mode);
torch::Tensor horizontal_flip(const torch::Tensor& image);
// Float [C, H, W] in [0, 1] minus mean, over std, per channel (a single value for every one).
torch::Tensor normalize(const torch::Tensor& image, const std::vector<double>& mean,
                        const std::vector<double>& std);

// RandomCrop.get_params after its padding: no draw when the image is the crop's size.
CropBox random_crop_box(int64_t height, int64_t width, const std::vector<int64_t>& size,
                        at::Generator& generator);
// RandomResizedCrop.get_params: ten tries at an area and aspect, then the central fallback.
CropBox random_resized_crop_box(int64_t height, int64_t width, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, at::Generator& generator);

// random_crop's padding (padding, then pad_if_needed's), before its box is drawn.
torch::Tensor random_crop_padding(const config::TransformSpec& t, torch::Tensor image);

// One transform as apply_transforms applies it: uint8 stays uint8 until a normalize.
torch::Tensor apply_transform(const config::TransformSpec& t, torch::Tensor image,
                              at::Generator& generator);
// The transforms in order on a decoded uint8 image [C, H, W], then ToTensor's v / 255 (before
// the first normalize, or at the end): float32 [C, H', W'].
torch::Tensor apply_transforms(const std::vector<config::TransformSpec>& transforms,
                               torch::Tensor image, at::Generator& generator);

// The shape [C, H, W] the transforms make of an image of `shape`. A data error for what no
// image of that shape can go through (a reflect padding wider than the image, a normalize of
// other channels).
std::vector<int64_t> shape_after(const std::vector<config::TransformSpec>& transforms,
                                 std::vector<int64_t> shape);
// The same, its error naming the list by `key` ("data.train_transforms: normalize with ...").
std::vector<int64_t> shape_after(const std::vector<config::TransformSpec>& transforms,
                                 std::vector<int64_t> shape, const std::string& key);

}  // namespace dptrain::data
