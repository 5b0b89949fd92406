#include "data/loader.h"

#include <algorithm>

namespace dptrain::data {

BatchLoader::BatchLoader(std::shared_ptr<const Dataset> dataset,
                         std::shared_ptr<const Sampler> sampler, LoaderOptions options,
                         torch::Device device)
    : dataset_(std::move(dataset)),
      sampler_(std::move(sampler)),
      options_(options),
      device_(device) {
  TORCH_CHECK(options_.batch_size > 0, "BatchLoader: batch_size must be positive");
}

int64_t BatchLoader::batches_per_epoch() const {
  const int64_t n = sampler_->size();
  const int64_t b = options_.batch_size;
  const int64_t full = options_.drop_last ? n / b : (n + b - 1) / b;
  return options_.limit_batches > 0 ? std::min(full, options_.limit_batches) : full;
}

void BatchLoader::start_epoch(int64_t epoch) {
  order_ = sampler_->epoch_indices(epoch);
  next_batch_ = 0;
}

std::optional<Batch> BatchLoader::next() {
  TORCH_CHECK(static_cast<int64_t>(order_.size()) == sampler_->size(),
              "BatchLoader: start_epoch() must come before next()");
  if (next_batch_ >= batches_per_epoch()) return std::nullopt;
  const int64_t begin = next_batch_ * options_.batch_size;
  const int64_t end = std::min<int64_t>(begin + options_.batch_size, order_.size());
  ++next_batch_;
  Batch batch =
      dataset_->get_batch(std::vector<int64_t>(order_.begin() + begin, order_.begin() + end));
  if (device_.is_cpu()) return batch;
  const bool pinned = options_.pin_memory;
  if (pinned) {
    batch.images = batch.images.pin_memory();
    batch.labels = batch.labels.pin_memory();
  }
  batch.images = batch.images.to(device_, /*non_blocking=*/pinned);
  batch.labels = batch.labels.to(device_, /*non_blocking=*/pinned);
  return batch;
}

}  // namespace dptrain::data
