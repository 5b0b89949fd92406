#include "data/transformed_dataset.h"

#include <ATen/Parallel.h>
#include <spdlog/fmt/fmt.h>

#include "core/error.h"
#include "data/crop_flip.h"
#include "data/transforms.h"

namespace dptrain::data {

TransformedDataset::TransformedDataset(std::shared_ptr<const Dataset> base,
                                       std::vector<config::TransformSpec> transforms, int64_t seed)
    : base_(std::move(base)), transforms_(std::move(transforms)), seed_(seed) {
  shape_ = shape_after(transforms_, base_->sample_shape());
  for (const auto& t : transforms_) {
    using config::TransformName;
    random_ = random_ || t.name == TransformName::kRandomCrop ||
              t.name == TransformName::kRandomResizedCrop ||
              t.name == TransformName::kRandomHorizontalFlip;
  }
  std::string why;
  if (std::optional<CropFlip> plan = CropFlip::plan(transforms_, seed_, "transforms", &why)) {
    crop_flip_ = std::make_shared<const CropFlip>(std::move(*plan));
    const torch::Tensor table = crop_flip_->value_table(shape_[0]);
    values_.assign(table.data_ptr<float>(), table.data_ptr<float>() + table.numel());
  }
}

torch::Tensor TransformedDataset::sample(int64_t i, int64_t epoch, int64_t* label) const {
  const RawSample raw = base_->raw_sample(i);
  if (label != nullptr) *label = raw.label;
  at::Generator generator = sample_generator(seed_, epoch, i);
  torch::Tensor out;
  try {
    out = apply_transforms(transforms_, raw.pixels, generator);
  } catch (const core::Error& e) {
    throw core::Error(e.code(), sample_name(i) + ": " + e.what(), e.hint());
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
    if (crop_flip_) {
      const RawSample raw = base_->raw_sample(i);
      dst_labels[b] = raw.label;
      if (crop_flip_->render(raw.pixels, i, epoch, shape_, values_.data(),
                             images.data_ptr<float>() + b * values)) {
        continue;
      }
    }
    images[b].copy_(sample(i, epoch, &dst_labels[b]));
  }
}

StoredSplit TransformedDataset::stored_split() const {
  if (!random_) return Dataset::stored_split();
  TORCH_CHECK(crop_flip_, "TransformedDataset: random transforms the device cannot draw");
  const CropFlip* plan = crop_flip_.get();
  const int64_t n = size();
  TORCH_CHECK(n > 0, "TransformedDataset: an empty split kept on the device");
  std::vector<int64_t> labels(static_cast<size_t>(n));
  const RawSample first = base_->raw_sample(0);
  const torch::Tensor shape_of = plan->prepare(first.pixels);
  std::vector<int64_t> shape = shape_of.sizes().vec();
  shape.insert(shape.begin(), n);
  torch::Tensor samples = torch::empty(shape, torch::kUInt8);
  at::parallel_for(0, n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const RawSample raw = base_->raw_sample(i);
      const torch::Tensor prepared = plan->prepare(raw.pixels);
      if (prepared.sizes() != shape_of.sizes()) {
        throw core::Error(core::ErrorCode::kData,
                          sample_name(i) + fmt::format(": prepared for the device as {}x{}, and "
                                                       "the first sample as {}x{}",
                                                       prepared.size(2), prepared.size(1),
                                                       shape_of.size(2), shape_of.size(1)),
                          "give every picture one size (a resize to [height, width] first)");
      }
      samples[i].copy_(prepared);
      labels[static_cast<size_t>(i)] = raw.label;
    }
  });
  StoredSplit out;
  out.samples = samples;
  out.labels = torch::tensor(labels, torch::kInt64);
  out.decode_table = plan->value_table(shape_of.size(0));
  out.augment = crop_flip_;
  return out;
}

}  // namespace dptrain::data
