// One epoch of host batches, assembled in the sampler's order: on `workers` threads that run at
// most `depth` batches ahead of the consumer, or in the consumer's own thread when workers is 0.
// Whatever the worker count, batch k holds the same samples. Destroying a pipeline stops and joins
// its threads, even with batches still in flight.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "data/dataset.h"
#include "data/staging.h"

namespace dptrain::data {

// An epoch's order cut into batches of batch_size (the last one possibly short).
struct BatchPlan {
  std::vector<int64_t> order;
  int64_t batch_size = 1;
  int64_t batches = 0;  // how many of them the epoch takes
  int64_t first = 0;    // the first one assembled (a resumed epoch's)
  c10::ArrayRef<int64_t> indices(int64_t k) const;
};

class BatchPipeline {
 public:
  struct Options {
    int64_t workers = 0;
    int64_t depth = 2;  // batches assembled or being assembled ahead of the consumer
    int64_t epoch = 0;  // what random transforms draw for, and for messages
  };
  BatchPipeline(std::shared_ptr<const Dataset> dataset, BatchPlan plan,
                std::shared_ptr<StagingPool> pool, Options options);
  ~BatchPipeline();
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // The next batch in order; nullopt after the last. A worker's failure is rethrown here, when
  // its batch's turn comes, as a data error naming the batch and the worker.
  std::optional<StagedBatch> next();

 private:
  struct Result {
    std::optional<StagedBatch> batch;
    std::exception_ptr error;
    int64_t worker = -1;
    bool done = false;
  };
  void work(int64_t worker);
  void stop();  // cancels and joins the workers
  // Assembles batch k into a staging buffer; nullopt when cancelled first.
  std::optional<StagedBatch> assemble(int64_t k);
  [[noreturn]] void fail(int64_t k, int64_t worker, std::exception_ptr error) const;

  std::shared_ptr<const Dataset> dataset_;
  BatchPlan plan_;
  std::shared_ptr<StagingPool> pool_;
  Options options_;
  int64_t workers_ = 0;  // threads started: no more than there are batches
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;
  std::condition_variable room_;   // a worker may start its next batch
  std::condition_variable ready_;  // the consumer's next batch may be done
  int64_t consumed_ = 0;
  std::vector<Result> results_;
  std::vector<std::thread> threads_;
};

}  // namespace dptrain::data
