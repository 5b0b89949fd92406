// Some samples of a data set, in a given order, without copying them: the training and validation
// parts of data.val_split over any source (in-memory IDX, a folder read per batch).
#pragma once

#include <memory>
#include <vector>

#include "data/dataset.h"

namespace dptrain::data {

class SubsetDataset : public Dataset {
 public:
  // Sample i is base's sample indices[i]; each index must be in [0, base->size()).
  SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices);

  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  std::vector<int64_t> sample_shape() const override { return base_->sample_shape(); }
  void fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                  torch::Tensor& labels) const override;
  // The base's stored form (uint8 and its table for IDX), its rows picked.
  StoredSplit stored_split() const override;
  RawSample raw_sample(int64_t i) const override { return base_->raw_sample(base_index(i)); }
  std::string sample_name(int64_t i) const override { return base_->sample_name(base_index(i)); }

 private:
  int64_t base_index(int64_t i) const;

  std::shared_ptr<const Dataset> base_;
  std::vector<int64_t> indices_;
};

}  // namespace dptrain::data
