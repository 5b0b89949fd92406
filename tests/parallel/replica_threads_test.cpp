// dp's threads: every job runs, at the same time as the others, under the caller's grad and
// inference modes; a failure waits for the rest and names the lowest-numbered job.
#include "parallel/replica_threads.h"

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include "support/catch.h"

using dptrain::parallel::ReplicaThreads;

TEST_CASE("replica threads run every job at the same time", "[parallel][dp]") {
  ReplicaThreads threads(3);
  // Each job waits until all three are inside: that can only happen if they run concurrently.
  // The deadline keeps a broken implementation from hanging the suite.
  std::atomic<int> inside{0};
  std::vector<int> saw_all(3, 0);
  threads.run(3, [&](size_t i) {
    ++inside;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (inside.load() < 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    saw_all[i] = inside.load() == 3 ? 1 : 0;
  });
  CHECK(saw_all == std::vector<int>{1, 1, 1});
}

TEST_CASE("replica threads run jobs under the caller's grad and inference modes",
          "[parallel][dp]") {
  ReplicaThreads threads(2);
  std::vector<int> grad_mode(2, -1), inference_mode(2, -1);
  auto record = [&](size_t i) {
    grad_mode[i] = torch::GradMode::is_enabled() ? 1 : 0;
    inference_mode[i] = c10::InferenceMode::is_enabled() ? 1 : 0;
  };
  {
    torch::NoGradGuard no_grad;
    threads.run(2, record);
  }
  CHECK(grad_mode == std::vector<int>{0, 0});
  CHECK(inference_mode == std::vector<int>{0, 0});
  {
    c10::InferenceMode inference;
    threads.run(2, record);
  }
  CHECK(inference_mode == std::vector<int>{1, 1});
  threads.run(2, record);
  CHECK(grad_mode == std::vector<int>{1, 1});
  CHECK(inference_mode == std::vector<int>{0, 0});
}

TEST_CASE("a failing job lets the others finish and its error is rethrown", "[parallel][dp]") {
  ReplicaThreads threads(4);
  std::vector<int> ran(4, 0);
  auto job = [&](size_t i) {
    ran[i] = 1;
    if (i == 2 || i == 3) throw std::runtime_error("job " + std::to_string(i) + " failed");
  };
  CHECK_THROWS_WITH(threads.run(4, job), "job 2 failed");
  CHECK(ran == std::vector<int>{1, 1, 1, 1});

  // The threads are still there for the next round, which may use fewer of them.
  std::fill(ran.begin(), ran.end(), 0);
  threads.run(2, [&](size_t i) { ran[i] = 1; });
  CHECK(ran == std::vector<int>{1, 1, 0, 0});
}
