#include "data/dataset.h"

#include <numeric>

namespace dptrain::data {

Batch Dataset::get_batch(c10::ArrayRef<int64_t> indices) const {
  std::vector<int64_t> shape = sample_shape();
  shape.insert(shape.begin(), static_cast<int64_t>(indices.size()));
  Batch batch{torch::empty(shape, torch::kFloat32),
              torch::empty({static_cast<int64_t>(indices.size())}, torch::kInt64)};
  fill_batch(indices, batch.images, batch.labels);
  return batch;
}

StoredSplit Dataset::stored_split() const {
  std::vector<int64_t> all(static_cast<size_t>(size()));
  std::iota(all.begin(), all.end(), int64_t{0});
  const Batch everything = get_batch(all);
  return {everything.images, everything.labels, torch::Tensor()};
}

}  // namespace dptrain::data
