// The loader under failure: a worker's error, an early stop with batches in flight, Ctrl-C while
// waiting, and the reuse of staging buffers.
#include "support/catch.h"

#include <csignal>
#include <thread>

#include "core/error.h"
#include "core/interrupt.h"
#include "data/loader.h"
#include "data/staging.h"
#include "support/datasets.h"

using namespace dptrain;
using namespace std::chrono_literals;
using testing::FaultyDataset;

namespace {

data::LoaderOptions host_options(int64_t batch_size, int64_t workers) {
  data::LoaderOptions o;
  o.batch_size = batch_size;
  o.num_workers = workers;
  return o;
}

std::unique_ptr<data::Loader> sequential_loader(std::shared_ptr<const data::Dataset> dataset,
                                                data::LoaderOptions options) {
  auto sampler = std::make_shared<data::SequentialSampler>(dataset->size());
  return data::make_loader(std::move(dataset), std::move(sampler), options, torch::kCPU);
}

}  // namespace

TEST_CASE("a worker's error reaches the trainer in turn, naming batch and worker", "[data]") {
  // Sample 37 sits in the 4th batch (batches of 10), which worker 3 % workers assembles (counted
  // from 0, as torch's DataLoader hands them out).
  auto dataset = std::make_shared<FaultyDataset>(100, /*bad_index=*/37, 0ms);
  for (const int64_t workers : {0, 1, 2, 4}) {
    INFO("workers " << workers);
    const int64_t before = testing::thread_count();
    {
      const auto loader = sequential_loader(dataset, host_options(10, workers));
      loader->start_epoch(1);
      for (int k = 0; k < 3; ++k) REQUIRE(loader->next());  // the batches before it arrive
      std::string message;
      core::ErrorCode code = core::ErrorCode::kRuntime;
      try {
        loader->next();
      } catch (const core::Error& e) {
        message = e.what();
        code = e.code();
        CHECK(e.hint() == "replace the file");
      }
      CHECK(code == core::ErrorCode::kData);
      const std::string who =
          workers == 0 ? "data loader" : "data loader worker " + std::to_string(3 % workers);
      CHECK(message == who + ": batch 4 of epoch 2: sample 37 is corrupt");
      // The next epoch starts afresh (the bad sample fails again at its turn).
      loader->start_epoch(2);
      CHECK(loader->next());
      // Taken up at that batch, as a resumed epoch is: it comes first, from the same worker.
      loader->start_epoch_at(1, 3);
      try {
        loader->next();
        FAIL("the bad batch arrived");
      } catch (const core::Error& e) {
        CHECK(std::string(e.what()) == who + ": batch 4 of epoch 2: sample 37 is corrupt");
      }
      loader->start_epoch_at(1, 4);
      int64_t rest = 0;
      while (loader->next()) ++rest;
      CHECK(rest == 6);
      // With fewer batches left than workers, each still goes to the worker it would have.
      auto late = std::make_shared<FaultyDataset>(100, /*bad_index=*/85, 0ms);
      const auto tail = sequential_loader(late, host_options(10, workers));
      tail->start_epoch_at(0, 8);
      try {
        tail->next();
        FAIL("the bad batch arrived");
      } catch (const core::Error& e) {
        const std::string late_worker =
            workers == 0 ? "data loader" : "data loader worker " + std::to_string(8 % workers);
        CHECK(std::string(e.what()) == late_worker + ": batch 9 of epoch 1: sample 85 is corrupt");
      }
    }
    CHECK(testing::thread_count_once_down_to(before) == before);
  }
}

TEST_CASE("stopping early with batches in flight joins every worker", "[data]") {
  auto dataset = std::make_shared<FaultyDataset>(400, /*bad_index=*/-1, 2ms);
  const int64_t before = testing::thread_count();
  {
    data::LoaderOptions options = host_options(8, 4);
    options.prefetch_batches = 6;
    const auto loader = sequential_loader(dataset, options);
    loader->start_epoch(0);
    REQUIRE(loader->next());
    std::this_thread::sleep_for(20ms);  // let the workers fill the queue and block on it
    CHECK(testing::thread_count() == before + 4);
    // Abandoning the epoch midway restarts cleanly, in order.
    loader->start_epoch(1);
    const auto first = loader->next();
    REQUIRE(first);
    CHECK(testing::indices_in(*first) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
    REQUIRE(loader->next());
  }  // destroyed with batches queued and workers waiting for room
  CHECK(testing::thread_count_once_down_to(before) == before);
}

TEST_CASE("Ctrl-C while waiting for a slow worker stops the wait at once", "[data]") {
  auto dataset = std::make_shared<FaultyDataset>(40, /*bad_index=*/-1, 1500ms);
  core::clear_interrupt();
  const auto loader = sequential_loader(dataset, host_options(10, 2));
  loader->start_epoch(0);
  // Ctrl-C arrives while next() waits for batch 0; a wait that did not notice it would return
  // the batch once the worker is done, 1.5 s in, instead of throwing.
  std::thread ctrl_c([] {
    std::this_thread::sleep_for(100ms);
    std::raise(SIGINT);
  });
  core::ErrorCode code = core::ErrorCode::kRuntime;
  std::string message;
  try {
    loader->next();
  } catch (const core::Error& e) {
    code = e.code();
    message = e.what();
  }
  ctrl_c.join();
  core::clear_interrupt();
  CHECK(code == core::ErrorCode::kInterrupted);
  CHECK(message == "interrupted by Ctrl-C (SIGINT) while waiting for the data loader");
}

TEST_CASE("a fixed staging pool reuses its buffers and waits for one to come back", "[data]") {
  data::StagingPool::Options options;
  options.max_batch = 4;
  options.sample_shape = {1, 2, 2};
  options.buffers = 2;
  auto pool = data::StagingPool::make(options);
  std::atomic<bool> cancelled{false};
  auto a = pool->acquire(4, cancelled);
  auto b = pool->acquire(3, cancelled);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(b->batch.images.sizes() == torch::IntArrayRef({3, 1, 2, 2}));
  const void* a_memory = a->batch.images.data_ptr();
  std::atomic<bool> got_third{false};
  std::thread waiter([&] {
    auto c = pool->acquire(2, cancelled);
    got_third = c && c->batch.images.data_ptr() == a_memory;  // a's buffer, handed back
  });
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(got_third);  // both buffers are out: it waits
  a.reset();
  waiter.join();
  CHECK(got_third);
  // A waiter gives up when cancelled.
  auto held = pool->acquire(1, cancelled);
  cancelled = true;
  CHECK_FALSE(pool->acquire(1, cancelled));
}
