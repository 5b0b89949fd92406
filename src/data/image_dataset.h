// Single-channel images held in memory as uint8 (47 MB for Fashion-MNIST's 60,000 + 10,000),
// turned into [0, 1] floats only per batch.
#pragma once

#include <filesystem>

#include "data/dataset.h"

namespace dptrain::data {

class ImageDataset : public Dataset {
 public:
  // images: uint8 [N, H, W]; labels: uint8 [N] with values below `num_classes`.
  ImageDataset(torch::Tensor images, torch::Tensor labels, int64_t num_classes);

  // Reads an IDX image file and its IDX label file, checking that they agree.
  static ImageDataset from_idx_files(const std::filesystem::path& images_file,
                                     const std::filesystem::path& labels_file, int64_t num_classes);

  int64_t size() const override { return images_.size(0); }
  std::vector<int64_t> sample_shape() const override;
  void fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                  torch::Tensor& labels) const override;
  // The uint8 images themselves and the v / 255 table: a quarter of the float size on a device.
  StoredSplit stored_split() const override;
  RawSample raw_sample(int64_t i) const override;

 private:
  torch::Tensor images_;
  torch::Tensor labels_;
  int64_t num_classes_;
};

}  // namespace dptrain::data
