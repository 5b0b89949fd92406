// Small in-memory data sets for loader tests, whose batches say which samples they hold.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "data/dataset.h"
#include "data/image_dataset.h"
#include "data/loader.h"

namespace dptrain::testing {

// n images of 2x2 pixels: pixel 0 holds index % 256, pixel 1 index / 256; labels index % 10.
std::shared_ptr<data::ImageDataset> counting_dataset(int64_t n);

// The sample indices a batch of counting_dataset holds (read back from its pixels).
std::vector<int64_t> indices_in(const data::Batch& batch);

// Every batch of one epoch, as index lists.
std::vector<std::vector<int64_t>> epoch_batches(data::Loader& loader, int64_t epoch);

// counting_dataset with faults: fill_batch throws for one index, and may be slow.
class FaultyDataset : public data::Dataset {
 public:
  FaultyDataset(int64_t n, int64_t bad_index, std::chrono::milliseconds delay_per_batch);
  int64_t size() const override { return inner_->size(); }
  std::vector<int64_t> sample_shape() const override { return inner_->sample_shape(); }
  void fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                  torch::Tensor& labels) const override;

 private:
  std::shared_ptr<data::ImageDataset> inner_;
  int64_t bad_index_;
  std::chrono::milliseconds delay_;
};

// Threads of this process now (Linux: /proc/self/task).
int64_t thread_count();

// The thread count once it has come down to `expected`, or what it still is after 10 s. A joined
// thread can stay listed in /proc/self/task for a moment after pthread_join returns (the kernel
// wakes the joiner before it reaps the thread), long enough to be seen on a loaded machine; a
// thread that was never joined stays for good and still fails the comparison.
int64_t thread_count_once_down_to(int64_t expected);

}  // namespace dptrain::testing
