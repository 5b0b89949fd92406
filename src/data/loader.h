// Cuts a sampler's order into batches, assembles each from the dataset and moves it to the
// training device. This version assembles in the calling thread; the multi-worker, prefetching
// loader replaces its insides behind the same interface.
#pragma once

#include <memory>
#include <optional>

#include "data/dataset.h"
#include "data/sampler.h"

namespace dptrain::data {

struct LoaderOptions {
  int64_t batch_size = 256;
  bool drop_last = false;
  int64_t limit_batches = 0;  // 0: every batch
  bool pin_memory = false;    // page-locked host batches and non-blocking copies (CUDA only)
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Sampler> sampler,
              LoaderOptions options, torch::Device device);

  int64_t batches_per_epoch() const;
  void start_epoch(int64_t epoch);
  // The next batch of the epoch, on the device; nullopt at the end of the epoch.
  std::optional<Batch> next();

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const Sampler> sampler_;
  LoaderOptions options_;
  torch::Device device_;
  std::vector<int64_t> order_;
  int64_t next_batch_ = 0;
};

}  // namespace dptrain::data
