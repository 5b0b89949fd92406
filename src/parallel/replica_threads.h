// The threads that run dp's replicas side by side, one per device. They live as long as the
// backend, so a step costs two hand-offs, not thread start-ups. Replica 0 runs on the calling
// thread; each job runs under the caller's thread-local state (grad mode, inference mode, autocast
// on or off and its dtypes), which a new thread would otherwise not have, and clears autocast's
// cast cache when it ends (the next step's weights are new).
#pragma once

#include <ATen/ThreadLocalState.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/autocast.h"

namespace dptrain::parallel {

class ReplicaThreads {
 public:
  // Room for `replicas` jobs at once: replicas - 1 worker threads.
  explicit ReplicaThreads(size_t replicas);
  ~ReplicaThreads();
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  // Runs job(0) ... job(n - 1) concurrently (n at most `replicas`) and returns once every one has
  // finished, whether or not another failed, so that nothing is left running. Then rethrows the
  // failure of the lowest-numbered job, if any.
  void run(size_t n, const std::function<void(size_t)>& job);

 private:
  void serve(size_t index);
  void run_one(size_t index);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  const std::function<void(size_t)>* job_ = nullptr;
  std::optional<at::ThreadLocalState> caller_state_;
  core::AutocastDtypes caller_autocast_;
  std::vector<std::exception_ptr> errors_;
  size_t active_ = 0;     // jobs in the current round
  size_t remaining_ = 0;  // worker jobs of the current round not yet finished
  uint64_t round_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dptrain::parallel
