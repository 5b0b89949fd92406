#include "data/staging.h"

#include <chrono>

namespace dptrain::data {

StagedBatch::StagedBatch(Batch batch_, std::shared_ptr<StagingPool> pool, int slot)
    : batch(std::move(batch_)), pool_(std::move(pool)), slot_(slot) {}

StagedBatch::StagedBatch(StagedBatch&& other) noexcept
    : batch(std::move(other.batch)), pool_(std::move(other.pool_)), slot_(other.slot_) {
  other.slot_ = -1;
}

StagedBatch& StagedBatch::operator=(StagedBatch&& other) noexcept {
  if (this != &other) {
    give_back();
    batch = std::move(other.batch);
    pool_ = std::move(other.pool_);
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

StagedBatch::~StagedBatch() {
  give_back();
}

void StagedBatch::give_back() {
  if (pool_ && slot_ >= 0) pool_->release(slot_);
  slot_ = -1;
  pool_.reset();
}

std::shared_ptr<StagingPool> StagingPool::make(Options options) {
  return std::shared_ptr<StagingPool>(new StagingPool(std::move(options)));
}

StagingPool::StagingPool(Options options) : options_(std::move(options)) {
  TORCH_CHECK(options_.max_batch > 0 && options_.buffers >= 0, "StagingPool: bad options");
  for (int64_t i = 0; i < options_.buffers; ++i) {
    buffers_.push_back(allocate(options_.max_batch));
    free_.push_back(static_cast<int>(i));
  }
}

Batch StagingPool::allocate(int64_t rows) const {
  std::vector<int64_t> shape = options_.sample_shape;
  shape.insert(shape.begin(), rows);
  const auto options = torch::TensorOptions().pinned_memory(options_.pinned);
  return {torch::empty(shape, options.dtype(torch::kFloat32)),
          torch::empty({rows}, options.dtype(torch::kInt64))};
}

std::optional<StagedBatch> StagingPool::acquire(int64_t n, const std::atomic<bool>& cancelled) {
  TORCH_CHECK(n > 0 && n <= options_.max_batch, "StagingPool: ", n, " rows do not fit");
  if (buffers_.empty()) return StagedBatch(allocate(n), nullptr, -1);
  std::unique_lock<std::mutex> lock(mutex_);
  // Buffers come back from the consumer's thread; the timeout only bounds how late a
  // cancellation is seen.
  while (free_.empty()) {
    if (cancelled) return std::nullopt;
    returned_.wait_for(lock, std::chrono::milliseconds(20));
  }
  const int slot = free_.back();
  free_.pop_back();
  const Batch& buffer = buffers_[static_cast<size_t>(slot)];
  return StagedBatch({buffer.images.narrow(0, 0, n), buffer.labels.narrow(0, 0, n)},
                     shared_from_this(), slot);
}

void StagingPool::release(int slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(slot);
  }
  returned_.notify_one();
}

}  // namespace dptrain::data
