#include "data/batch_pipeline.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"
#include "core/interrupt.h"

namespace dptrain::data {
namespace {

using core::Error;
using core::ErrorCode;

std::string describe(const std::exception_ptr& error, ErrorCode* code, std::string* hint) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    *code = e.code();
    *hint = e.hint();
    return e.what();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

c10::ArrayRef<int64_t> BatchPlan::indices(int64_t k) const {
  const int64_t begin = k * batch_size;
  const int64_t end = std::min<int64_t>(begin + batch_size, static_cast<int64_t>(order.size()));
  return c10::ArrayRef<int64_t>(order).slice(static_cast<size_t>(begin),
                                             static_cast<size_t>(end - begin));
}

BatchPipeline::BatchPipeline(std::shared_ptr<const Dataset> dataset, BatchPlan plan,
                             std::shared_ptr<StagingPool> pool, Options options)
    : dataset_(std::move(dataset)),
      plan_(std::move(plan)),
      pool_(std::move(pool)),
      options_(options),
      results_(static_cast<size_t>(plan_.batches)) {
  TORCH_CHECK(options_.workers >= 0 && options_.depth >= 1, "BatchPipeline: bad options");
  TORCH_CHECK(plan_.first >= 0 && plan_.first <= plan_.batches, "BatchPipeline: bad first batch");
  consumed_ = plan_.first;
  // As many as an epoch from its start would have, so that batch k's worker is the same on a
  // resume (one with no batch left ends at once).
  workers_ = std::min(options_.workers, plan_.batches);
  try {
    for (int64_t w = 0; w < workers_; ++w) {
      threads_.emplace_back([this, w] { work(w); });
      const std::string name = "dptrain-load" + std::to_string(w);
      pthread_setname_np(threads_.back().native_handle(), name.substr(0, 15).c_str());
    }
  } catch (...) {
    stop();  // the destructor does not run for a half-built pipeline
    throw;
  }
}

BatchPipeline::~BatchPipeline() {
  stop();
}

void BatchPipeline::stop() {
  cancelled_ = true;
  {
    // Taking the lock once means no worker is between checking `cancelled_` and waiting.
    std::lock_guard<std::mutex> lock(mutex_);
  }
  room_.notify_all();
  for (auto& t : threads_) t.join();
}

std::optional<StagedBatch> BatchPipeline::assemble(int64_t k) {
  const c10::ArrayRef<int64_t> indices = plan_.indices(k);
  std::optional<StagedBatch> staged =
      pool_->acquire(static_cast<int64_t>(indices.size()), cancelled_);
  if (staged) {
    dataset_->fill_epoch_batch(indices, options_.epoch, staged->batch.images, staged->batch.labels);
  }
  return staged;
}

void BatchPipeline::work(int64_t worker) {
  // Batch k goes to worker k % workers, as in torch's DataLoader, so a failure names the same
  // worker on every run (a resumed epoch's too).
  const int64_t start = plan_.first + ((worker - plan_.first) % workers_ + workers_) % workers_;
  for (int64_t k = start; k < plan_.batches; k += workers_) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      room_.wait(lock, [&] { return cancelled_ || k < consumed_ + options_.depth; });
      if (cancelled_) return;
    }
    Result result;
    result.worker = worker;
    try {
      result.batch = assemble(k);
      if (!result.batch) return;  // cancelled while waiting for a buffer
    } catch (...) {
      result.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      result.done = true;
      results_[static_cast<size_t>(k)] = std::move(result);
    }
    ready_.notify_all();
  }
}

std::optional<StagedBatch> BatchPipeline::next() {
  const int64_t k = consumed_;
  if (k >= plan_.batches) return std::nullopt;
  if (workers_ == 0) {
    ++consumed_;
    try {
      return assemble(k);
    } catch (...) {
      fail(k, /*worker=*/-1, std::current_exception());
    }
  }
  Result result;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // Waits in slices so that Ctrl-C is noticed even while a worker is slow.
    while (!results_[static_cast<size_t>(k)].done) {
      lock.unlock();
      core::throw_if_interrupted("while waiting for the data loader");
      lock.lock();
      ready_.wait_for(lock, std::chrono::milliseconds(50),
                      [&] { return results_[static_cast<size_t>(k)].done; });
    }
    result = std::move(results_[static_cast<size_t>(k)]);
    ++consumed_;
  }
  room_.notify_all();
  if (result.error) fail(k, result.worker, result.error);
  return std::move(result.batch);
}

void BatchPipeline::fail(int64_t k, int64_t worker, std::exception_ptr error) const {
  ErrorCode code = ErrorCode::kData;
  std::string hint;
  const std::string what = describe(error, &code, &hint);
  const std::string where = worker >= 0 ? "data loader worker " + std::to_string(worker) + ": "
                                        : std::string("data loader: ");
  if (hint.empty()) hint = "a sample of the data set could not be read; check the data files";
  throw Error(code,
              where + "batch " + std::to_string(k + 1) + " of epoch " +
                  std::to_string(options_.epoch + 1) + ": " + what,
              hint);
}

}  // namespace dptrain::data
