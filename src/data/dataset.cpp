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
  return {everything.images, everything.labels, torch::Tensor(), nullptr};
}

void check_batch_buffers(const torch::Tensor& images, const torch::Tensor& labels, int64_t n,
                         int64_t values, const char* who) {
  TORCH_CHECK(images.is_contiguous() && images.scalar_type() == torch::kFloat32 &&
                  images.numel() >= n * values,
              who, ": the image buffer is too small or not contiguous float32");
  TORCH_CHECK(
      labels.is_contiguous() && labels.scalar_type() == torch::kInt64 && labels.numel() >= n, who,
      ": the label buffer is too small or not contiguous int64");
}

RawSample Dataset::raw_sample(int64_t i) const {
  (void)i;
  TORCH_CHECK(false, "this data set keeps no stored form of its samples for transforms");
}

}  // namespace dptrain::data
