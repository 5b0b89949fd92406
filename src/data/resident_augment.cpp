#include "data/resident_augment.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/DistributionsHelper.h>
#include <spdlog/fmt/fmt.h>

#include "data/transforms.h"

namespace dptrain::data {
namespace {

using config::TransformName;
using config::TransformSpec;

const char* transform_word(TransformName name) {
  switch (name) {
    case TransformName::kResize:
      return "resize";
    case TransformName::kCenterCrop:
      return "center_crop";
    case TransformName::kRandomCrop:
      return "random_crop";
    case TransformName::kRandomResizedCrop:
      return "random_resized_crop";
    case TransformName::kRandomHorizontalFlip:
      return "random_horizontal_flip";
    case TransformName::kNormalize:
      return "normalize";
  }
  return "?";
}

bool is_random(TransformName name) {
  return name == TransformName::kRandomCrop || name == TransformName::kRandomResizedCrop ||
         name == TransformName::kRandomHorizontalFlip;
}

// The draws torch::randint(0, range, {1}, g) and torch::rand({1}, g) make on a CPU generator:
// the very distributions its CPU kernels call (tests/data/resident_augment_test.cpp compares
// them with the tensors' draws).
int64_t draw_below(at::CPUGeneratorImpl& generator, int64_t range) {
  at::uniform_int_from_to_distribution<int64_t> below(static_cast<uint64_t>(range), 0);
  return below(&generator);
}

double draw_unit(at::CPUGeneratorImpl& generator) {
  at::uniform_real_distribution<float> unit(0, 1);
  return static_cast<double>(static_cast<float>(unit(&generator)));
}

}  // namespace

ResidentAugment::Draws ResidentAugment::Draws::slice(int64_t begin, int64_t end) const {
  return {tops.slice(0, begin, end), lefts.slice(0, begin, end), flips.slice(0, begin, end)};
}

ResidentAugment::Draws ResidentAugment::Draws::to(torch::Device device) const {
  return {tops.to(device), lefts.to(device), flips.to(device)};
}

std::optional<ResidentAugment> ResidentAugment::plan(const std::vector<TransformSpec>& transforms,
                                                     int64_t seed, const std::string& key,
                                                     std::string* why) {
  ResidentAugment out;
  out.seed_ = seed;
  const auto refuse = [&](size_t i, const std::string& reason) {
    *why = fmt::format("{}[{}] ({}) cannot run on the device: {}", key, i,
                       transform_word(transforms[i].name), reason);
    return std::nullopt;
  };
  bool randoms_seen = false;
  for (size_t i = 0; i < transforms.size(); ++i) {
    const TransformSpec& t = transforms[i];
    if (t.name == TransformName::kNormalize) {
      if (!randoms_seen &&
          std::any_of(transforms.begin() + static_cast<std::ptrdiff_t>(i), transforms.end(),
                      [](const TransformSpec& u) { return is_random(u.name); })) {
        return refuse(i,
                      "a normalize before a random transform (the device crops and flips bytes)");
      }
      out.closing_.push_back(t);
    } else if (!out.closing_.empty()) {
      return refuse(i, "only normalizes may follow a normalize there");
    } else if (t.name == TransformName::kRandomResizedCrop) {
      return refuse(i, "only random_crop and random_horizontal_flip are drawn there");
    } else if (t.name == TransformName::kRandomCrop && !out.crop_) {
      out.crop_ = t;
      randoms_seen = true;
    } else if (t.name == TransformName::kRandomHorizontalFlip && !out.flip_) {
      out.flip_ = t;
      out.flip_first_ = !out.crop_;
      randoms_seen = true;
    } else if (is_random(t.name)) {
      return refuse(i, "each random transform is drawn once there");
    } else if (randoms_seen) {
      return refuse(i, "only normalizes may follow the random transforms there");
    } else {
      out.fixed_.push_back(t);
    }
  }
  if (out.crop_ && out.flip_ && out.flip_first_ && out.crop_->padding[0] != out.crop_->padding[2]) {
    // A flip before an uneven padding moves the padding with it: the kept form would differ.
    const auto crop_at = static_cast<size_t>(
        std::find_if(transforms.begin(), transforms.end(),
                     [](const TransformSpec& u) { return u.name == TransformName::kRandomCrop; }) -
        transforms.begin());
    return refuse(crop_at,
                  "a flip before a crop padded unevenly left and right (put the flip after it)");
  }
  if (!randoms_seen) {
    *why = key + " draws nothing";
    return std::nullopt;
  }
  return out;
}

torch::Tensor ResidentAugment::prepare(const torch::Tensor& raw) const {
  // The fixed part draws nothing: the generator is never used.
  at::Generator unused = at::make_generator<at::CPUGeneratorImpl>(0);
  torch::Tensor image = raw;
  for (const TransformSpec& t : fixed_) image = apply_transform(t, image, unused);
  if (crop_) image = random_crop_padding(*crop_, image);
  return image.contiguous();
}

torch::Tensor ResidentAugment::value_table(int64_t channels) const {
  // Every byte in every channel as an image [C, 1, 256], through what the host applies to it.
  const torch::Tensor bytes = torch::arange(256, torch::kInt64)
                                  .to(torch::kUInt8)
                                  .view({1, 1, 256})
                                  .repeat({channels, 1, 1});
  at::Generator unused = at::make_generator<at::CPUGeneratorImpl>(0);
  return apply_transforms(closing_, bytes, unused).reshape({channels * 256}).contiguous();
}

ResidentAugment::Draws ResidentAugment::draw(c10::ArrayRef<int64_t> indices, int64_t epoch,
                                             int64_t height, int64_t width) const {
  const auto m = static_cast<int64_t>(indices.size());
  Draws d{torch::zeros({m}, torch::kInt64), torch::zeros({m}, torch::kInt64),
          torch::zeros({m}, torch::kInt64)};
  int64_t* tops = d.tops.data_ptr<int64_t>();
  int64_t* lefts = d.lefts.data_ptr<int64_t>();
  int64_t* flips = d.flips.data_ptr<int64_t>();
  const auto crop = [&](at::CPUGeneratorImpl& g, int64_t k) {
    // random_crop_box: no draw when the padded sample is the crop's size.
    const int64_t th = crop_->size[0];
    const int64_t tw = crop_->size[1];
    if (height == th && width == tw) return;
    tops[k] = draw_below(g, height - th + 1);
    lefts[k] = draw_below(g, width - tw + 1);
  };
  const auto flip = [&](at::CPUGeneratorImpl& g, int64_t k) {
    flips[k] = draw_unit(g) < flip_->p ? 1 : 0;
  };
  at::parallel_for(0, m, 2048, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      at::CPUGeneratorImpl g(sample_seed(seed_, epoch, indices[static_cast<size_t>(k)]));
      if (flip_ && flip_first_) flip(g, k);
      if (crop_) crop(g, k);
      if (flip_ && !flip_first_) flip(g, k);
    }
  });
  return d;
}

torch::Tensor ResidentAugment::gather(const torch::Tensor& samples, const torch::Tensor& indices,
                                      const Draws& draws) const {
  const int64_t b = indices.size(0);
  const int64_t c = samples.size(1);
  const int64_t height = samples.size(2);
  const int64_t width = samples.size(3);
  const int64_t th = crop_ ? crop_->size[0] : height;
  const int64_t tw = crop_ ? crop_->size[1] : width;
  const auto on = indices.options();
  const torch::Tensor rows = draws.tops.view({b, 1}) + torch::arange(th, on).view({1, th});
  const torch::Tensor x = torch::arange(tw, on).view({1, tw});
  const torch::Tensor left = draws.lefts.view({b, 1});
  // Flipped after the crop, output column x reads the box's column tw - 1 - x; flipped before
  // it, the padded sample's column width - 1 - (left + x), the box having been drawn on the
  // mirrored sample.
  const torch::Tensor mirrored = flip_first_ ? (width - 1) - left - x : left + (tw - 1) - x;
  const torch::Tensor cols =
      torch::where(draws.flips.view({b, 1}).to(torch::kBool), mirrored, left + x);
  return samples.index({indices.view({b, 1, 1, 1}), torch::arange(c, on).view({1, c, 1, 1}),
                        rows.view({b, 1, th, 1}), cols.view({b, 1, 1, tw})});
}

}  // namespace dptrain::data
