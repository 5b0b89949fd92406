#include "data/host_loader.h"

#include <algorithm>
#include <utility>

namespace dptrain::data {
namespace {

int64_t prefetch_depth(const LoaderOptions& options) {
  if (options.prefetch_batches > 0) return options.prefetch_batches;
  return 2 * std::max<int64_t>(1, options.num_workers);  // torch's prefetch_factor 2 per worker
}

}  // namespace

HostLoader::HostLoader(std::shared_ptr<const Dataset> dataset,
                       std::shared_ptr<const Sampler> sampler, LoaderOptions options,
                       torch::Device device)
    : dataset_(std::move(dataset)),
      sampler_(std::move(sampler)),
      options_(options),
      device_(device) {
  const bool pinned = options_.pin_memory && device_.is_cuda();
  StagingPool::Options pool;
  pool.max_batch = options_.batch_size;
  pool.sample_shape = dataset_->sample_shape();
  pool.pinned = pinned;
  // Pinned memory is costly to allocate, so its buffers are reused: enough for every batch the
  // pipeline may hold, the one being copied, and one being handed over.
  pool.buffers = pinned ? prefetch_depth(options_) + 2 : 0;
  pool_ = StagingPool::make(pool);
  if (pinned) copier_ = std::make_unique<DeviceCopier>(device_);
}

int64_t HostLoader::batches_per_epoch() const {
  return data::batches_per_epoch(sampler_->size(), options_);
}

void HostLoader::start_epoch_at(int64_t epoch, int64_t first_batch) {
  pipeline_.reset();
  following_error_ = nullptr;
  if (copier_ && copier_->busy()) copier_->take();  // drops a batch left from an early stop
  BatchPlan plan;
  plan.order = sampler_->epoch_indices(epoch);
  plan.batch_size = options_.batch_size;
  plan.batches = batches_per_epoch();
  plan.first = first_batch;
  BatchPipeline::Options pipeline;
  pipeline.workers = options_.num_workers;
  pipeline.depth = prefetch_depth(options_);
  pipeline.epoch = epoch;
  pipeline_ = std::make_unique<BatchPipeline>(dataset_, std::move(plan), pool_, pipeline);
}

std::optional<Batch> HostLoader::next() {
  TORCH_CHECK(pipeline_, "loader: start_epoch() must come before next()");
  if (copier_) {
    if (following_error_) std::rethrow_exception(std::exchange(following_error_, nullptr));
    if (!copier_->busy()) {
      auto first = pipeline_->next();
      if (!first) return std::nullopt;
      copier_->launch(std::move(*first));
    }
    Batch batch = copier_->take();
    // Launched before the caller queues batch k's compute, so the two overlap on the device. A
    // failure of batch k + 1 is raised at its own turn, as without pinning.
    try {
      if (auto following = pipeline_->next()) copier_->launch(std::move(*following));
    } catch (...) {
      following_error_ = std::current_exception();
    }
    return batch;
  }
  auto staged = pipeline_->next();
  if (!staged) return std::nullopt;
  Batch batch = std::move(staged->batch);  // plain buffers: the batch owns its memory
  if (device_.is_cpu()) return batch;
  return Batch{batch.images.to(device_), batch.labels.to(device_)};
}

}  // namespace dptrain::data
