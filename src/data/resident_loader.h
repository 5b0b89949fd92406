// The device placement: the whole split is copied once to the training device in its stored form
// (uint8 images: 47 MB for Fashion-MNIST) and each batch is gathered there by index and decoded,
// with no host work per step but slicing the epoch's order, itself uploaded once per epoch. Random
// crops and flips are drawn for the whole epoch at its start and uploaded with the order
// (data/crop_flip.h).
#pragma once

#include <memory>

#include "data/crop_flip.h"
#include "data/loader.h"

namespace dptrain::data {

class ResidentLoader : public Loader {
 public:
  ResidentLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Sampler> sampler,
                 LoaderOptions options, torch::Device device);

  int64_t batches_per_epoch() const override;
  void start_epoch_at(int64_t epoch, int64_t first_batch) override;
  std::optional<Batch> next() override;

 private:
  std::shared_ptr<const Sampler> sampler_;
  LoaderOptions options_;
  torch::Device device_;
  torch::Tensor samples_;                    // [N, C, H, W] as stored, on the device
  torch::Tensor labels_;                     // [N] int64, on the device
  torch::Tensor decode_table_;               // [256] float, or undefined
  torch::Tensor order_;                      // this epoch's indices, on the device
  std::shared_ptr<const CropFlip> augment_;  // null when nothing draws
  CropFlip::Draws draws_;                    // this epoch's, in the order's order
  int64_t next_batch_ = 0;
};

}  // namespace dptrain::data
