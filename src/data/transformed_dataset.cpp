#include "data/transformed_dataset.h"

#include <spdlog/fmt/fmt.h>

#include "core/error.h"
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
    images[b].copy_(sample(i, epoch, &dst_labels[b]));
  }
}

}  // namespace dptrain::data
