// The host placement: an epoch's batches come from a BatchPipeline (worker threads, bounded
// prefetch) and go to the training device as they are taken. To a CUDA device with pin_memory,
// they are assembled straight into a reused pool of pinned buffers and copied one batch ahead on
// a side stream, so that copying batch k + 1 overlaps computing batch k.
#pragma once

#include <exception>
#include <memory>

#include "data/batch_pipeline.h"
#include "data/device_copy.h"
#include "data/loader.h"

namespace dptrain::data {

class HostLoader : public Loader {
 public:
  HostLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Sampler> sampler,
             LoaderOptions options, torch::Device device);

  int64_t batches_per_epoch() const override;
  void start_epoch_at(int64_t epoch, int64_t first_batch) override;
  std::optional<Batch> next() override;

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const Sampler> sampler_;
  LoaderOptions options_;
  torch::Device device_;
  std::shared_ptr<StagingPool> pool_;
  std::unique_ptr<DeviceCopier> copier_;  // CUDA with pin_memory only
  std::exception_ptr following_error_;    // the copier's look-ahead failed: raised next time
  // Declared last, so destroyed first: its threads stop before the pool they fill goes away.
  std::unique_ptr<BatchPipeline> pipeline_;
};

}  // namespace dptrain::data
