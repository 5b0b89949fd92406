#include "data/transforms.h"

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/fmt/fmt.h>

#include <cmath>

#include "core/error.h"
#include "data/resize_aa.h"

namespace dptrain::data {
namespace {

using config::TransformName;
using config::TransformSpec;

// Python's round(): halves to even, as std::nearbyint rounds in the default mode.
int64_t python_round(double x) {
  return static_cast<int64_t>(std::nearbyint(x));
}

[[noreturn]] void cannot(const std::string& what, const std::string& hint) {
  throw core::Error(core::ErrorCode::kData, what, hint);
}

torch::Tensor pad_axis(const torch::Tensor& image, int64_t dim, int64_t before, int64_t after,
                       const std::string& mode) {
  if (before == 0 && after == 0) return image;
  const int64_t n = image.size(dim);
  const int64_t most = mode == "reflect" ? n - 1 : n;
  if (mode != "edge" && (before > most || after > most)) {
    cannot(
        fmt::format("a {} padding of {} pixels on a side of {}", mode, std::max(before, after), n),
        mode == "reflect" ? "reflect pads by less than the side (as torch's pad)"
                          : "symmetric pads by the side at most");
  }
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(n + before + after));
  for (int64_t i = -before; i < n + after; ++i) rows.push_back(padded_source_index(i, n, mode));
  return image.index_select(dim, torch::tensor(rows, torch::kInt64));
}

}  // namespace

int64_t padded_source_index(int64_t i, int64_t n, const std::string& mode) {
  if (i >= 0 && i < n) return i;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  if (mode == "reflect") return i < 0 ? -i : 2 * (n - 1) - i;
  return i < 0 ? -i - 1 : 2 * n - 1 - i;  // symmetric: the edge pixel repeated
}

uint64_t sample_seed(int64_t seed, int64_t epoch, int64_t index) {
  // splitmix64's finaliser over the three, chained: nearby (epoch, index) pairs give unrelated
  // seeds. 63 bits, which torch.manual_seed takes as it is; its mt19937 (and so the draws)
  // keeps the low 32 alone, so two samples of an epoch share their draws about once in 2^32
  // pairs, as they would in PyTorch.
  const auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(static_cast<uint64_t>(seed) + 0x9E3779B97F4A7C15ULL);
  h = mix(h ^ (static_cast<uint64_t>(epoch) + 0x632BE59BD9B4E019ULL));
  h = mix(h ^ (static_cast<uint64_t>(index) + 0x85157AF5ULL));
  return h >> 1;
}

at::Generator sample_generator(int64_t seed, int64_t epoch, int64_t index) {
  return at::make_generator<at::CPUGeneratorImpl>(sample_seed(seed, epoch, index));
}

std::array<int64_t, 2> resized_size(int64_t height, int64_t width,
                                    const std::vector<int64_t>& size) {
  if (size.size() == 2) return {size[0], size[1]};
  const int64_t shorter = std::min(height, width);
  const int64_t longer = std::max(height, width);
  // int(requested * long / short): Python's true division, then truncation.
  const auto new_long = static_cast<int64_t>(std::min(
      static_cast<double>(size[0]) * static_cast<double>(longer) / static_cast<double>(shorter),
      1e18));
  // The aspect is the picture's, so a thin one would make a vast sample: bounded, as decoding is.
  if (new_long > config::kLargestSide) {
    cannot(
        fmt::format("a resize of the shorter side to {} makes this {}x{} picture {} pixels long, "
                    "more than the {} a side transforms make",
                    size[0], width, height, new_long, config::kLargestSide),
        "resize to [height, width], or crop the pictures to a common shape first");
  }
  return width <= height ? std::array<int64_t, 2>{new_long, size[0]}
                         : std::array<int64_t, 2>{size[0], new_long};
}

torch::Tensor resize(const torch::Tensor& image, const std::vector<int64_t>& size, bool antialias) {
  const auto [h, w] = resized_size(image.size(1), image.size(2), size);
  if (h == image.size(1) && w == image.size(2)) return image;  // torchvision returns it as it is
  if (antialias && image.scalar_type() == torch::kUInt8) return resize_bilinear_aa(image, h, w);
  const torch::Tensor x = image.to(torch::kFloat32).unsqueeze(0);
  torch::Tensor y = antialias ? at::_upsample_bilinear2d_aa(x, {h, w}, /*align_corners=*/false,
                                                            c10::nullopt, c10::nullopt)
                              : at::upsample_bilinear2d(x, {h, w}, /*align_corners=*/false,
                                                        c10::nullopt, c10::nullopt);
  y = y.squeeze(0);
  if (image.scalar_type() == torch::kUInt8) return y.round().to(torch::kUInt8);
  return y.to(image.scalar_type());
}

torch::Tensor crop(const torch::Tensor& image, const CropBox& box) {
  const int64_t h = image.size(1);
  const int64_t w = image.size(2);
  const int64_t right = box.left + box.width;
  const int64_t bottom = box.top + box.height;
  if (box.left >= 0 && box.top >= 0 && right <= w && bottom <= h) {
    return image.slice(1, box.top, bottom).slice(2, box.left, right);
  }
  const std::array<int64_t, 4> padding = {
      std::max<int64_t>(-box.left + std::min<int64_t>(0, right), 0),
      std::max<int64_t>(-box.top + std::min<int64_t>(0, bottom), 0),
      std::max<int64_t>(right - std::max(w, box.left), 0),
      std::max<int64_t>(bottom - std::max(h, box.top), 0)};
  const torch::Tensor inside =
      image.slice(1, std::max<int64_t>(box.top, 0), std::max<int64_t>(bottom, 0))
          .slice(2, std::max<int64_t>(box.left, 0), std::max<int64_t>(right, 0));
  return pad(inside, padding, 0, "constant");
}

torch::Tensor center_crop(const torch::Tensor& image, const std::vector<int64_t>& size) {
  const int64_t th = size[0];
  const int64_t tw = size.size() > 1 ? size[1] : size[0];
  torch::Tensor img = image;
  if (tw > img.size(2) || th > img.size(1)) {
    const int64_t dw = std::max<int64_t>(tw - img.size(2), 0);
    const int64_t dh = std::max<int64_t>(th - img.size(1), 0);
    img = pad(img, {dw / 2, dh / 2, (dw + 1) / 2, (dh + 1) / 2}, 0, "constant");
    if (img.size(1) == th && img.size(2) == tw) return img;
  }
  const int64_t top = python_round(static_cast<double>(img.size(1) - th) / 2.0);
  const int64_t left = python_round(static_cast<double>(img.size(2) - tw) / 2.0);
  return crop(img, {top, left, th, tw});
}

torch::Tensor pad(const torch::Tensor& image, const std::array<int64_t, 4>& padding, double fill,
                  const std::string& mode) {
  const auto [left, top, right, bottom] = padding;
  if (left == 0 && top == 0 && right == 0 && bottom == 0) return image;
  if (mode == "constant") {
    return at::constant_pad_nd(image, {left, right, top, bottom}, fill);
  }
  return pad_axis(pad_axis(image, 1, top, bottom, mode), 2, left, right, mode);
}

torch::Tensor horizontal_flip(const torch::Tensor& image) {
  return image.flip({-1});
}

torch::Tensor normalize(const torch::Tensor& image, const std::vector<double>& mean,
                        const std::vector<double>& std) {
  const int64_t c = image.size(0);
  const auto per_channel = [c](const std::vector<double>& v) {
    std::vector<float> values(static_cast<size_t>(c));
    for (int64_t k = 0; k < c; ++k) {
      values[static_cast<size_t>(k)] = static_cast<float>(v.size() == 1 ? v[0] : v[k]);
    }
    return torch::tensor(values, torch::kFloat32).view({c, 1, 1});
  };
  return image.sub(per_channel(mean)).div(per_channel(std));
}

CropBox random_crop_box(int64_t height, int64_t width, const std::vector<int64_t>& size,
                        at::Generator& generator) {
  const int64_t th = size[0];
  const int64_t tw = size[1];
  if (height < th || width < tw) {
    cannot(fmt::format("random_crop of {}x{} from a picture of {}x{}", tw, th, width, height),
           "pad it first (padding, or pad_if_needed: true), or crop less");
  }
  if (height == th && width == tw) return {0, 0, height, width};
  const int64_t top = torch::randint(0, height - th + 1, {1}, generator).item<int64_t>();
  const int64_t left = torch::randint(0, width - tw + 1, {1}, generator).item<int64_t>();
  return {top, left, th, tw};
}

CropBox random_resized_crop_box(int64_t height, int64_t width, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, at::Generator& generator) {
  const double area = static_cast<double>(height * width);
  // torchvision draws in float32 tensors and computes in Python floats: so here.
  const torch::Tensor log_ratio = torch::log(torch::tensor({ratio[0], ratio[1]}, torch::kFloat32));
  const double low = log_ratio[0].item<double>();
  const double high = log_ratio[1].item<double>();
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target =
        area *
        torch::empty({1}, torch::kFloat32).uniform_(scale[0], scale[1], generator).item<double>();
    const double aspect =
        torch::exp(torch::empty({1}, torch::kFloat32).uniform_(low, high, generator))
            .item<double>();
    const int64_t w = python_round(std::sqrt(target * aspect));
    const int64_t h = python_round(std::sqrt(target / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int64_t top = torch::randint(0, height - h + 1, {1}, generator).item<int64_t>();
      const int64_t left = torch::randint(0, width - w + 1, {1}, generator).item<int64_t>();
      return {top, left, h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width;
  int64_t h = height;
  if (in_ratio < std::min(ratio[0], ratio[1])) {
    h = python_round(static_cast<double>(w) / std::min(ratio[0], ratio[1]));
  } else if (in_ratio > std::max(ratio[0], ratio[1])) {
    w = python_round(static_cast<double>(h) * std::max(ratio[0], ratio[1]));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

namespace {

torch::Tensor random_crop(const TransformSpec& t, torch::Tensor img, at::Generator& generator) {
  img = random_crop_padding(t, img);
  return crop(img, random_crop_box(img.size(1), img.size(2), t.size, generator));
}

torch::Tensor to_unit_float(const torch::Tensor& img) {
  return img.scalar_type() == torch::kUInt8 ? img.to(torch::kFloat32).div(255.0f) : img;
}

}  // namespace

torch::Tensor random_crop_padding(const TransformSpec& t, torch::Tensor img) {
  img = pad(img, t.padding, t.fill, t.padding_mode);
  // torchvision pads both sides by the shortfall ([d, 0] is left and right, each d).
  if (t.pad_if_needed && img.size(2) < t.size[1]) {
    const int64_t d = t.size[1] - img.size(2);
    img = pad(img, {d, 0, d, 0}, t.fill, t.padding_mode);
  }
  if (t.pad_if_needed && img.size(1) < t.size[0]) {
    const int64_t d = t.size[0] - img.size(1);
    img = pad(img, {0, d, 0, d}, t.fill, t.padding_mode);
  }
  return img;
}

torch::Tensor apply_transform(const TransformSpec& t, torch::Tensor img, at::Generator& generator) {
  switch (t.name) {
    case TransformName::kResize:
      return resize(img, t.size, t.antialias);
    case TransformName::kCenterCrop:
      return center_crop(img, t.size);
    case TransformName::kRandomCrop:
      return random_crop(t, img, generator);
    case TransformName::kRandomResizedCrop: {
      const CropBox box =
          random_resized_crop_box(img.size(1), img.size(2), t.scale, t.ratio, generator);
      return resize(crop(img, box), t.size, t.antialias);
    }
    case TransformName::kRandomHorizontalFlip:
      return torch::rand({1}, generator).item<double>() < t.p ? horizontal_flip(img) : img;
    case TransformName::kNormalize:
      return normalize(to_unit_float(img), t.mean, t.std);
  }
  return img;
}

torch::Tensor apply_transforms(const std::vector<TransformSpec>& transforms, torch::Tensor img,
                               at::Generator& generator) {
  for (const TransformSpec& t : transforms) img = apply_transform(t, img, generator);
  return to_unit_float(img).contiguous();
}

std::vector<int64_t> shape_after(const std::vector<TransformSpec>& transforms,
                                 std::vector<int64_t> shape) {
  for (const TransformSpec& t : transforms) {
    switch (t.name) {
      case TransformName::kResize: {
        const auto [h, w] = resized_size(shape[1], shape[2], t.size);
        shape = {shape[0], h, w};
        break;
      }
      case TransformName::kRandomCrop:
        // What cannot be cropped from every picture of this shape is said before training.
        if (!t.pad_if_needed && (shape[1] + t.padding[1] + t.padding[3] < t.size[0] ||
                                 shape[2] + t.padding[0] + t.padding[2] < t.size[1])) {
          cannot(
              fmt::format("random_crop of {}x{} from pictures of {}x{} (padded {}x{})", t.size[1],
                          t.size[0], shape[2], shape[1], shape[2] + t.padding[0] + t.padding[2],
                          shape[1] + t.padding[1] + t.padding[3]),
              "pad them (padding, or pad_if_needed: true), or crop less");
        }
        shape = {shape[0], t.size[0], t.size[1]};
        break;
      case TransformName::kCenterCrop:
      case TransformName::kRandomResizedCrop:
        shape = {shape[0], t.size[0], t.size.size() > 1 ? t.size[1] : t.size[0]};
        break;
      case TransformName::kRandomHorizontalFlip:
        break;
      case TransformName::kNormalize:
        if (t.mean.size() != 1 && static_cast<int64_t>(t.mean.size()) != shape[0]) {
          cannot(fmt::format("normalize with {} means, for pictures of {} channels", t.mean.size(),
                             shape[0]),
                 "give one mean and std per channel (or one for all)");
        }
        break;
    }
  }
  return shape;
}

std::vector<int64_t> shape_after(const std::vector<TransformSpec>& transforms,
                                 std::vector<int64_t> shape, const std::string& key) {
  try {
    return shape_after(transforms, std::move(shape));
  } catch (const core::Error& e) {
    throw core::Error(e.code(), key + ": " + e.what(), e.hint());
  }
}

}  // namespace dptrain::data
