#include "data/resident_loader.h"

namespace dptrain::data {

ResidentLoader::ResidentLoader(std::shared_ptr<const Dataset> dataset,
                               std::shared_ptr<const Sampler> sampler, LoaderOptions options,
                               torch::Device device)
    : sampler_(std::move(sampler)), options_(options), device_(device) {
  const StoredSplit stored = dataset->stored_split();
  samples_ = stored.samples.to(device_);
  labels_ = stored.labels.to(device_, torch::kInt64);
  if (stored.decode_table.defined()) decode_table_ = stored.decode_table.to(device_);
  augment_ = stored.augment;
}

int64_t ResidentLoader::batches_per_epoch() const {
  return data::batches_per_epoch(sampler_->size(), options_);
}

void ResidentLoader::start_epoch_at(int64_t epoch, int64_t first_batch) {
  TORCH_CHECK(first_batch >= 0 && first_batch <= batches_per_epoch(), "loader: first batch ",
              first_batch, " is not in the epoch");
  const std::vector<int64_t> order = sampler_->epoch_indices(epoch);
  order_ = torch::tensor(order, torch::kInt64).to(device_);
  if (augment_) {
    draws_ = augment_->draw(order, epoch, samples_.size(2), samples_.size(3)).to(device_);
  }
  next_batch_ = first_batch;
}

std::optional<Batch> ResidentLoader::next() {
  TORCH_CHECK(order_.defined(), "loader: start_epoch() must come before next()");
  if (next_batch_ >= batches_per_epoch()) return std::nullopt;
  const int64_t begin = next_batch_ * options_.batch_size;
  const int64_t end = std::min<int64_t>(begin + options_.batch_size, order_.size(0));
  ++next_batch_;
  const torch::Tensor indices = order_.slice(0, begin, end);
  torch::Tensor images = augment_ ? augment_->gather(samples_, indices, draws_.slice(begin, end))
                                  : samples_.index_select(0, indices);
  if (decode_table_.defined()) {
    // A table lookup rather than a division: bit-identical to the host path on every device.
    torch::Tensor bytes = images.to(torch::kInt64);
    if (decode_table_.dim() == 2) {  // a table per channel, [C, 256]
      const int64_t channels = images.size(1);
      bytes = bytes + torch::arange(channels, bytes.options()).mul(256).view({1, channels, 1, 1});
    }
    images = decode_table_.take(bytes);
  }
  return Batch{images, labels_.index_select(0, indices)};
}

}  // namespace dptrain::data
