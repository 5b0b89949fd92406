#include "parallel/replica_threads.h"

#include <ATen/Parallel.h>

namespace dptrain::parallel {

ReplicaThreads::ReplicaThreads(size_t replicas) : errors_(replicas) {
  for (size_t i = 1; i < replicas; ++i) workers_.emplace_back([this, i] { serve(i); });
}

ReplicaThreads::~ReplicaThreads() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ReplicaThreads::run(size_t n, const std::function<void(size_t)>& job) {
  TORCH_CHECK(n <= errors_.size(), "ReplicaThreads: ", n, " jobs for ", errors_.size(), " threads");
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    caller_state_.emplace();
    caller_autocast_ = core::AutocastDtypes::of_this_thread();
    std::fill(errors_.begin(), errors_.end(), nullptr);
    active_ = n;
    remaining_ = n > 0 ? n - 1 : 0;
    ++round_;
  }
  wake_.notify_all();
  if (n > 0) run_one(0);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [this] { return remaining_ == 0; });
    job_ = nullptr;
  }
  for (size_t i = 0; i < n; ++i) {
    if (errors_[i]) std::rethrow_exception(errors_[i]);
  }
}

void ReplicaThreads::run_one(size_t index) {
  try {
    (*job_)(index);
  } catch (...) {
    errors_[index] = std::current_exception();  // each job writes only its own slot
  }
}

void ReplicaThreads::serve(size_t index) {
  // Intra-op threads as set_num_threads last said: a thread of our own starts from the default.
  at::init_num_threads();
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return stopping_ || round_ != seen; });
    if (stopping_) return;
    seen = round_;
    if (index >= active_) continue;  // this round needs fewer replicas (a small last batch)
    const at::ThreadLocalState state = *caller_state_;
    caller_autocast_.apply_to_this_thread();
    lock.unlock();
    {
      const at::ThreadLocalStateGuard as_the_caller(state);
      const core::AutocastCacheScope cache;
      run_one(index);
    }
    lock.lock();
    if (--remaining_ == 0) finished_.notify_one();
  }
}

}  // namespace dptrain::parallel
