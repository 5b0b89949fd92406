// A data set's samples through a list of transforms (data/transforms.h): each sample taken in its
// stored form (uint8), transformed with draws from (seed, epoch, its index) and scaled as ToTensor,
// so that batch k of an epoch is the same for any worker count, rank or resume. Every sample must
// come out of the transforms in one shape: another is a data error naming the sample.
#pragma once

#include <memory>
#include <vector>

#include "config/transforms.h"
#include "core/error.h"
#include "data/crop_flip.h"
#include "data/dataset.h"

namespace dptrain::data {

class TransformedDataset : public Dataset {
 public:
  // The shape is what the transforms make of base's sample shape (data::shape_after).
  TransformedDataset(std::shared_ptr<const Dataset> base,
                     std::vector<config::TransformSpec> transforms, int64_t seed);

  int64_t size() const override { return base_->size(); }
  std::vector<int64_t> sample_shape() const override { return shape_; }
  // Epoch 0's draws.
  void fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                  torch::Tensor& labels) const override {
    fill_epoch_batch(indices, 0, images, labels);
  }
  void fill_epoch_batch(c10::ArrayRef<int64_t> indices, int64_t epoch, torch::Tensor& images,
                        torch::Tensor& labels) const override;
  std::string sample_name(int64_t i) const override { return base_->sample_name(i); }
  // Without draws, every sample transformed (the default); with them, the samples as
  // data/crop_flip.h keeps them on the device, with their draws. A data error naming the
  // sample when the part applied once makes samples of two sizes.
  StoredSplit stored_split() const override;
  // Whether any transform draws (then a stored split would freeze epoch 0's draws).
  bool random() const { return random_; }
  // Sample i of epoch `epoch`, float32 [C, H, W], and its label into `label` when given: the
  // transforms one by one, which the loaders' one pass (data/crop_flip.h) must equal.
  torch::Tensor sample(int64_t i, int64_t epoch, int64_t* label = nullptr) const;

 private:
  // Sample i, decoded as `raw`, through the transforms one by one.
  torch::Tensor transformed(const RawSample& raw, int64_t i, int64_t epoch) const;
  // `e` with sample i's name in front, as every error about a sample has it.
  core::Error named(int64_t i, const core::Error& e) const;

  std::shared_ptr<const Dataset> base_;
  std::vector<config::TransformSpec> transforms_;
  int64_t seed_;
  std::vector<int64_t> shape_;
  bool random_ = false;
  // Random crops and flips computed in one pass (data/crop_flip.h), and its table; null for
  // other lists.
  std::shared_ptr<const CropFlip> crop_flip_;
  std::vector<float> values_;
};

}  // namespace dptrain::data
