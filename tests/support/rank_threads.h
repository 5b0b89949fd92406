// ddp ranks as threads of the test process: one in-process store, real Gloo process groups.
// Catch2's assertions are not thread-safe, so the ranks' threads take turns making them
// (RANK_CHECK).
#pragma once

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/communicator.h"
#include "support/catch.h"

namespace dptrain::testing {

constexpr std::chrono::milliseconds kRankTimeout{20000};

inline std::mutex& assertion_turn() {
  static std::mutex turn;
  return turn;
}

// Runs body(rank, communicator) on `world` threads; rethrows the first failure after joining.
// Over Gloo on the CPU, or over `transport` with rank r on device `devices[r]`.
template <class Body>
void run_ranks(int world, Body body,
               distributed::Transport transport = distributed::Transport::kGloo,
               const std::vector<torch::Device>& devices = {}) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        const torch::Device device =
            devices.empty() ? torch::Device(torch::kCPU) : devices.at(static_cast<size_t>(r));
        auto comm = std::make_unique<distributed::Communicator>(store, r, world, transport, device,
                                                                kRankTimeout);
        body(r, comm);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace dptrain::testing

#define RANK_CHECK(...)                                                    \
  do {                                                                     \
    std::lock_guard<std::mutex> turn_(dptrain::testing::assertion_turn()); \
    CHECK(__VA_ARGS__);                                                    \
  } while (false)
#define RANK_REQUIRE(...)                                                  \
  do {                                                                     \
    std::lock_guard<std::mutex> turn_(dptrain::testing::assertion_turn()); \
    REQUIRE(__VA_ARGS__);                                                  \
  } while (false)
