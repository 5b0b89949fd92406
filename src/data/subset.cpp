#include "data/subset.h"

namespace dptrain::data {

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  for (const int64_t i : indices_) {
    TORCH_CHECK(i >= 0 && i < base_->size(), "SubsetDataset: index ", i, " out of range");
  }
}

int64_t SubsetDataset::base_index(int64_t i) const {
  TORCH_CHECK(i >= 0 && i < size(), "SubsetDataset: index ", i, " out of range");
  return indices_[static_cast<size_t>(i)];
}

void SubsetDataset::fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                               torch::Tensor& labels) const {
  std::vector<int64_t> in_base;
  in_base.reserve(indices.size());
  for (const int64_t i : indices) in_base.push_back(base_index(i));
  base_->fill_batch(in_base, images, labels);
}

StoredSplit SubsetDataset::stored_split() const {
  StoredSplit whole = base_->stored_split();
  // The draws follow the base's indices, which a subset renumbers.
  TORCH_CHECK(!whole.augment, "SubsetDataset: a base that draws is kept on the device by itself");
  const torch::Tensor rows = torch::tensor(indices_, torch::kInt64);
  return {whole.samples.index_select(0, rows).contiguous(), whole.labels.index_select(0, rows),
          whole.decode_table, nullptr};
}

}  // namespace dptrain::data
