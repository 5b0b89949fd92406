// Buffers that loader workers assemble batches into. A fixed pool owns a set of buffers,
// allocated once and reused for the whole run: page-locked ones let a copy to a GPU be
// asynchronous without a page-locked allocation per step. A pool without fixed buffers allocates
// per batch, so that the batch owns its memory and may outlive the step.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "data/dataset.h"

namespace dptrain::data {

class StagingPool;

// A batch in a staging buffer; the buffer goes back to its pool when this is destroyed.
class StagedBatch {
 public:
  StagedBatch(Batch batch, std::shared_ptr<StagingPool> pool, int slot);
  StagedBatch(StagedBatch&& other) noexcept;
  StagedBatch& operator=(StagedBatch&& other) noexcept;
  StagedBatch(const StagedBatch&) = delete;
  StagedBatch& operator=(const StagedBatch&) = delete;
  ~StagedBatch();

  Batch batch;  // the first n rows of the buffer

 private:
  void give_back();
  std::shared_ptr<StagingPool> pool_;
  int slot_ = -1;
};

class StagingPool : public std::enable_shared_from_this<StagingPool> {
 public:
  struct Options {
    int64_t max_batch = 1;
    std::vector<int64_t> sample_shape;  // [C, H, W]
    bool pinned = false;                // page-locked memory (needs a CUDA build)
    int64_t buffers = 0;                // fixed buffers to reuse; 0: a fresh allocation per batch
  };
  static std::shared_ptr<StagingPool> make(Options options);

  // Room for n <= max_batch samples. Waits while every fixed buffer is out; nullopt when
  // `cancelled` becomes true first.
  std::optional<StagedBatch> acquire(int64_t n, const std::atomic<bool>& cancelled);

 private:
  explicit StagingPool(Options options);
  friend class StagedBatch;
  void release(int slot);
  Batch allocate(int64_t rows) const;

  Options options_;
  std::vector<Batch> buffers_;
  std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<int> free_;
};

}  // namespace dptrain::data
