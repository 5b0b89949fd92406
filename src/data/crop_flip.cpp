#include "data/crop_flip.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/DistributionsHelper.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "data/transforms.h"

namespace dptrain::data {
namespace {

using config::TransformName;
using config::TransformSpec;

// The draws torch::randint(0, range, {1}, g) and torch::rand({1}, g) make on a CPU generator:
// the very distributions its CPU kernels call (tests/data/crop_flip_test.cpp compares the batches
// they make with the samples data/transforms.h draws for with those tensors).
int64_t draw_below(at::CPUGeneratorImpl& generator, int64_t range) {
  at::uniform_int_from_to_distribution<int64_t> below(static_cast<uint64_t>(range), 0);
  return below(&generator);
}

double draw_unit(at::CPUGeneratorImpl& generator) {
  at::uniform_real_distribution<float> unit(0, 1);
  return static_cast<double>(static_cast<float>(unit(&generator)));
}

}  // namespace

CropFlip::Draws CropFlip::Draws::slice(int64_t begin, int64_t end) const {
  return {tops.slice(0, begin, end), lefts.slice(0, begin, end), flips.slice(0, begin, end)};
}

CropFlip::Draws CropFlip::Draws::to(torch::Device device) const {
  return {tops.to(device), lefts.to(device), flips.to(device)};
}

std::optional<CropFlip> CropFlip::plan(const std::vector<TransformSpec>& transforms, int64_t seed,
                                       const std::string& key, std::string* why) {
  CropFlip out;
  out.seed_ = seed;
  const auto refuse = [&](size_t i, const std::string& reason) {
    *why = fmt::format("{}[{}] ({}) cannot run on the device: {}", key, i,
                       config::transform_name(transforms[i].name), reason);
    return std::nullopt;
  };
  bool randoms_seen = false;
  for (size_t i = 0; i < transforms.size(); ++i) {
    const TransformSpec& t = transforms[i];
    if (t.name == TransformName::kNormalize) {
      if (!randoms_seen &&
          std::any_of(transforms.begin() + static_cast<std::ptrdiff_t>(i), transforms.end(),
                      [](const TransformSpec& u) { return config::is_random(u.name); })) {
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
      out.crop_at_ = i;
      randoms_seen = true;
    } else if (t.name == TransformName::kRandomHorizontalFlip && !out.flip_) {
      out.flip_ = t;
      out.flip_first_ = !out.crop_;
      randoms_seen = true;
    } else if (config::is_random(t.name)) {
      return refuse(i, "each random transform is drawn once there");
    } else if (randoms_seen) {
      return refuse(i, "only normalizes may follow the random transforms there");
    } else {
      out.fixed_.push_back(t);
    }
  }
  if (out.crop_ && out.flip_ && out.flip_first_ && out.crop_->padding[0] != out.crop_->padding[2]) {
    // A flip before an uneven padding moves the padding with it: the kept form would differ.
    return refuse(out.crop_at_,
                  "a flip before a crop padded unevenly left and right (put the flip after it)");
  }
  return out;
}

std::string CropFlip::device_cost(const std::vector<int64_t>& stored,
                                  const std::string& key) const {
  if (!crop_) return "";
  const std::vector<int64_t> fixed = shape_after(fixed_, stored);
  const auto [h, w] = padded_size(fixed[1], fixed[2]);
  if (h * w <= 4 * crop_->size[0] * crop_->size[1]) return "";
  return fmt::format(
      "{}[{}] (random_crop) would keep every sample padded to {}x{} on the device, more than four "
      "times the {}x{} pixels it crops",
      key, crop_at_, w, h, crop_->size[1], crop_->size[0]);
}

std::array<int64_t, 2> CropFlip::padded_size(int64_t height, int64_t width) const {
  if (!crop_) return {height, width};
  int64_t h = height + crop_->padding[1] + crop_->padding[3];
  int64_t w = width + crop_->padding[0] + crop_->padding[2];
  // pad_if_needed pads both sides by the shortfall (random_crop_padding).
  if (crop_->pad_if_needed && h < crop_->size[0]) h += 2 * (crop_->size[0] - h);
  if (crop_->pad_if_needed && w < crop_->size[1]) w += 2 * (crop_->size[1] - w);
  return {h, w};
}

torch::Tensor CropFlip::fixed_part(const torch::Tensor& raw) const {
  if (fixed_.empty()) return raw;
  at::Generator unused = at::make_generator<at::CPUGeneratorImpl>(0);  // fixed: no draws
  torch::Tensor image = raw;
  for (const TransformSpec& t : fixed_) image = apply_transform(t, image, unused);
  return image;
}

torch::Tensor CropFlip::prepare(const torch::Tensor& raw) const {
  torch::Tensor image = fixed_part(raw);
  if (crop_) image = random_crop_padding(*crop_, image);
  return image.contiguous();
}

torch::Tensor CropFlip::value_table(int64_t channels) const {
  // Every byte in every channel as an image [C, 1, 256], through what the host applies to it.
  const torch::Tensor bytes = torch::arange(256, torch::kInt64)
                                  .to(torch::kUInt8)
                                  .view({1, 1, 256})
                                  .repeat({channels, 1, 1});
  at::Generator unused = at::make_generator<at::CPUGeneratorImpl>(0);
  return apply_transforms(closing_, bytes, unused).reshape({channels, 256}).contiguous();
}

CropFlip::Draw CropFlip::draw_one(int64_t index, int64_t epoch, int64_t height,
                                  int64_t width) const {
  at::CPUGeneratorImpl generator(sample_seed(seed_, epoch, index));
  Draw d;
  const auto coin = [&] { d.flip = draw_unit(generator) < flip_->p; };
  if (flip_ && flip_first_) coin();
  // random_crop_box: no draw when the padded sample is the crop's size.
  if (crop_ && !(height == crop_->size[0] && width == crop_->size[1])) {
    d.top = draw_below(generator, height - crop_->size[0] + 1);
    d.left = draw_below(generator, width - crop_->size[1] + 1);
  }
  if (flip_ && !flip_first_) coin();
  return d;
}

CropFlip::Draws CropFlip::draw(c10::ArrayRef<int64_t> indices, int64_t epoch, int64_t height,
                               int64_t width) const {
  const auto m = static_cast<int64_t>(indices.size());
  Draws d{torch::empty({m}, torch::kInt64), torch::empty({m}, torch::kInt64),
          torch::empty({m}, torch::kInt64)};
  int64_t* tops = d.tops.data_ptr<int64_t>();
  int64_t* lefts = d.lefts.data_ptr<int64_t>();
  int64_t* flips = d.flips.data_ptr<int64_t>();
  at::parallel_for(0, m, 2048, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const Draw one = draw_one(indices[static_cast<size_t>(k)], epoch, height, width);
      tops[k] = one.top;
      lefts[k] = one.left;
      flips[k] = one.flip ? 1 : 0;
    }
  });
  return d;
}

bool CropFlip::source_positions(int64_t n, int64_t before, int64_t after, int64_t start,
                                int64_t size, bool mirrored, int64_t padded,
                                std::vector<int64_t>& out) const {
  const std::string mode = crop_ ? crop_->padding_mode : "constant";
  // pad_if_needed's padding: both sides by the shortfall, around the first.
  const int64_t once = n + before + after;
  const int64_t extra = (padded - once) / 2;
  const auto fits = [&](int64_t side, int64_t axis) {
    return mode == "constant" || mode == "edge" || side <= (mode == "reflect" ? axis - 1 : axis);
  };
  if (!fits(before, n) || !fits(after, n) || !fits(extra, once)) return false;
  const auto through = [&](int64_t p, int64_t axis, int64_t pad) -> int64_t {
    const int64_t i = p - pad;
    if (i >= 0 && i < axis) return i;
    return mode == "constant" ? -1 : padded_source_index(i, axis, mode);
  };
  out.resize(static_cast<size_t>(size));
  for (int64_t x = 0; x < size; ++x) {
    // Mirrored after the crop, x reads the box's size - 1 - x; before it, the padded sample's
    // padded - 1 - (start + x), the box having been drawn on the mirrored sample.
    const int64_t p = !mirrored     ? start + x
                      : flip_first_ ? padded - 1 - start - x
                                    : start + size - 1 - x;
    const int64_t in_once = through(p, once, extra);
    out[static_cast<size_t>(x)] = in_once < 0 ? -1 : through(in_once, n, before);
  }
  return true;
}

bool CropFlip::render(const torch::Tensor& raw, int64_t index, int64_t epoch,
                      c10::IntArrayRef shape, const float* table, float* out) const {
  torch::Tensor image = fixed_part(raw);
  if (image.scalar_type() != torch::kUInt8) return false;
  image = image.contiguous();
  const int64_t c = image.size(0), h = image.size(1), w = image.size(2);
  std::array<int64_t, 4> pad = {0, 0, 0, 0};  // left, top, right, bottom
  const auto [ph, pw] = padded_size(h, w);
  int64_t oh = h, ow = w;
  uint8_t fill = 0;
  if (crop_) {
    pad = crop_->padding;
    // The byte constant_pad_nd pads a uint8 picture with (config/transforms.h keeps the fill
    // within 0 to 255; a fraction is cut off, as its cast cuts it).
    fill = static_cast<uint8_t>(std::clamp(std::floor(crop_->fill), 0.0, 255.0));
    oh = crop_->size[0];
    ow = crop_->size[1];
    if (ph < oh || pw < ow) return false;  // random_crop_box's error
  }
  if (shape.size() != 3 || shape[0] != c || shape[1] != oh || shape[2] != ow) return false;
  const Draw d = draws() ? draw_one(index, epoch, ph, pw) : Draw{};
  thread_local std::vector<int64_t> rows, cols;
  if (!source_positions(h, pad[1], pad[3], d.top, oh, false, ph, rows) ||
      !source_positions(w, pad[0], pad[2], d.left, ow, d.flip, pw, cols)) {
    return false;
  }
  const uint8_t* src = image.data_ptr<uint8_t>();
  for (int64_t k = 0; k < c; ++k) {
    const float* values = table + k * 256;
    const uint8_t* plane = src + k * h * w;
    for (int64_t y = 0; y < oh; ++y) {
      const int64_t r = rows[static_cast<size_t>(y)];
      float* line = out + (k * oh + y) * ow;
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t col = cols[static_cast<size_t>(x)];
        line[x] = values[r < 0 || col < 0 ? fill : plane[r * w + col]];
      }
    }
  }
  return true;
}

torch::Tensor CropFlip::gather(const torch::Tensor& samples, const torch::Tensor& indices,
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
