#include "data/transformed_dataset.h"

#include <ATen/Parallel.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "core/error.h"
#include "data/crop_flip.h"
#include "data/transforms.h"

namespace dptrain::data {

TransformedDataset::TransformedDataset(std::shared_ptr<const Dataset> base,
                                       std::vector<config::TransformSpec> transforms, int64_t seed)
    : base_(std::move(base)), transforms_(std::move(transforms)), seed_(seed) {
  shape_ = shape_after(transforms_, base_->sample_shape());
  random_ = std::any_of(transforms_.begin(), transforms_.end(),
                        [](const config::TransformSpec& t) { return config::is_random(t.name); });
  std::string why;
  if (std::optional<CropFlip> plan = CropFlip::plan(transforms_, seed_, "transforms", &why)) {
    crop_flip_ = std::make_shared<const CropFlip>(std::move(*plan));
    const torch::Tensor table = crop_flip_->value_table(shape_[0]);
    values_.assign(table.data_ptr<float>(), table.data_ptr<float>() + table.numel());
  }
}

core::Error TransformedDataset::named(int64_t i, const core::Error& e) const {
  return core::Error(e.code(), sample_name(i) + ": " + e.what(), e.hint());
}

torch::Tensor TransformedDataset::sample(int64_t i, int64_t epoch, int64_t* label) const {
  const RawSample raw = base_->raw_sample(i);
  if (label != nullptr) *label = raw.label;
  return transformed(raw, i, epoch);
}

torch::Tensor TransformedDataset::transformed(const RawSample& raw, int64_t i,
                                              int64_t epoch) const {
  at::Generator generator = sample_generator(seed_, epoch, i);
  torch::Tensor out;
  try {
    out = apply_transforms(transforms_, raw.pixels, generator);
  } catch (const core::Error& e) {
    throw named(i, e);
  }
  if (out.sizes() != c10::IntArrayRef(shape_)) {
    throw core::Error(core::ErrorCode::kData,
                      sample_name(i) + fmt::format(": its transforms make a sample of {}x{} "
                                                   "with {} channels, and the data set's are "
                                                   "{}x{} with {}",
                                                   out.size(2), out.size(1), out.size(0), shape_[2],
                                                   shape_[1], shape_[0]),
                      "end the transforms with a fixed size (a resize to [height, width], or a "
                      "crop), or give every picture one size");
  }
  return out;
}

void TransformedDataset::fill_epoch_batch(c10::ArrayRef<int64_t> indices, int64_t epoch,
                                          torch::Tensor& images, torch::Tensor& labels) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t values = shape_[0] * shape_[1] * shape_[2];
  check_batch_buffers(images, labels, n, values, "TransformedDataset");
  int64_t* dst_labels = labels.data_ptr<int64_t>();
  for (int64_t b = 0; b < n; ++b) {
    const int64_t i = indices[b];
    TORCH_CHECK(i >= 0 && i < size(), "TransformedDataset: index ", i, " out of range");
    const RawSample raw = base_->raw_sample(i);
    dst_labels[b] = raw.label;
    bool rendered = false;
    try {
      rendered = crop_flip_ && crop_flip_->render(raw.pixels, i, epoch, shape_, values_.data(),
                                                  images.data_ptr<float>() + b * values);
    } catch (const core::Error& e) {
      throw named(i, e);
    }
    // What the one pass declines, the transforms one by one compute or refuse.
    if (!rendered) images[b].copy_(transformed(raw, i, epoch));
  }
}

StoredSplit TransformedDataset::stored_split() const {
  if (!crop_flip_) {
    TORCH_CHECK(!random_, "TransformedDataset: random transforms the device cannot draw");
    return Dataset::stored_split();  // every sample transformed, as floats
  }
  const CropFlip* plan = crop_flip_.get();
  StoredSplit out;
  const int64_t n = size();
  if (n == 0) {
    throw core::Error(core::ErrorCode::kData, "a split with no samples to keep on the device",
                      "give the data set samples in every split it trains or evaluates on");
  }
  // The part applied once, its errors naming the sample as the host path's do.
  out.labels = torch::empty({n}, torch::kInt64);
  int64_t* labels = out.labels.data_ptr<int64_t>();
  const auto prepared_sample = [&](int64_t i) {
    try {
      const RawSample raw = base_->raw_sample(i);
      labels[i] = raw.label;
      return plan->prepare(raw.pixels);
    } catch (const core::Error& e) {
      throw named(i, e);
    }
  };
  const torch::Tensor shape_of = prepared_sample(0);
  std::vector<int64_t> shape = shape_of.sizes().vec();
  shape.insert(shape.begin(), n);
  torch::Tensor samples = torch::empty(shape, torch::kUInt8);
  samples[0].copy_(shape_of);
  at::parallel_for(1, n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const torch::Tensor prepared = prepared_sample(i);
      if (prepared.sizes() != shape_of.sizes()) {
        throw core::Error(
            core::ErrorCode::kData,
            sample_name(i) + fmt::format(": prepared for the device as {}x{} with {} "
                                         "channels, and the first sample as {}x{} "
                                         "with {}",
                                         prepared.size(2), prepared.size(1), prepared.size(0),
                                         shape_of.size(2), shape_of.size(1), shape_of.size(0)),
            "give every picture one size (a resize to [height, width] first)");
      }
      samples[i].copy_(prepared);
    }
  });
  out.samples = samples;
  out.decode_table = plan->value_table(shape_of.size(0));
  if (crop_flip_->draws()) out.augment = crop_flip_;
  return out;
}

}  // namespace dptrain::data
