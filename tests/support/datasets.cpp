#include "support/datasets.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/error.h"

namespace dptrain::testing {

std::shared_ptr<data::ImageDataset> counting_dataset(int64_t n) {
  const auto index = torch::arange(n, torch::kInt64);
  auto images = torch::zeros({n, 2, 2}, torch::kUInt8);
  images.select(1, 0).select(1, 0).copy_(index.remainder(256));
  images.select(1, 0).select(1, 1).copy_(index.div(256, "floor"));
  return std::make_shared<data::ImageDataset>(images, index.remainder(10).to(torch::kUInt8), 10);
}

std::vector<int64_t> indices_in(const data::Batch& batch) {
  const auto pixels = batch.images.cpu().mul(255).round().to(torch::kInt64);
  const auto index = pixels.select(1, 0).select(1, 0).select(1, 0) +
                     256 * pixels.select(1, 0).select(1, 0).select(1, 1);
  return std::vector<int64_t>(index.data_ptr<int64_t>(), index.data_ptr<int64_t>() + index.numel());
}

std::vector<std::vector<int64_t>> epoch_batches(data::Loader& loader, int64_t epoch) {
  std::vector<std::vector<int64_t>> batches;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) batches.push_back(indices_in(*batch));
  return batches;
}

FaultyDataset::FaultyDataset(int64_t n, int64_t bad_index, std::chrono::milliseconds delay)
    : inner_(counting_dataset(n)), bad_index_(bad_index), delay_(delay) {}

void FaultyDataset::fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                               torch::Tensor& labels) const {
  std::this_thread::sleep_for(delay_);
  for (const int64_t i : indices) {
    if (i == bad_index_) {
      throw core::Error(core::ErrorCode::kData, "sample " + std::to_string(i) + " is corrupt",
                        "replace the file");
    }
  }
  inner_->fill_batch(indices, images, labels);
}

int64_t thread_count() {
  // A sanitizer's runtime may start a thread of its own with the process's first new thread
  // (ThreadSanitizer does): one thread made and joined first puts it in every count.
  static const bool runtime_threads_started = [] {
    std::thread([] {}).join();
    return true;
  }();
  (void)runtime_threads_started;
  int64_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

int64_t thread_count_once_down_to(int64_t expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t n = thread_count();
  while (n > expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = thread_count();
  }
  return n;
}

}  // namespace dptrain::testing
