// Communicators over a store that outlives their ranks, as torchrun's agent store outlives the
// workers it restarts: each generation (restart count) keeps to its own keys.
#include "distributed/communicator.h"
#include "store/plan.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <thread>

#include "support/catch.h"
#include "support/rank_threads.h"

namespace {

using dptrain::distributed::Communicator;
using dptrain::distributed::Transport;

constexpr std::chrono::milliseconds kTimeout{5000};

// One generation of `world` ranks over `store`: each joins, all-reduces its rank + 1 and gathers
// the ranks' names; rank `late` joins half a second after the others. Returns the sums.
std::vector<double> run_generation(const c10::intrusive_ptr<c10d::Store>& store, int world,
                                   int generation, int late) {
  std::vector<double> sums(static_cast<size_t>(world), 0);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        if (r == late) std::this_thread::sleep_for(std::chrono::milliseconds(500));
        Communicator comm(store, r, world, Transport::kGloo, torch::kCPU, kTimeout,
                          dptrain::store::key_prefix("test", "", generation));
        const torch::Tensor t = torch::full({1}, static_cast<double>(r + 1), torch::kFloat64);
        comm.all_reduce(t, "the test's all-reduce");
        sums[static_cast<size_t>(r)] = t.item<double>();
        const auto names = comm.all_gather_text(
            "name", "gen" + std::to_string(generation) + "-rank" + std::to_string(r));
        RANK_CHECK(names.back() ==
                   "gen" + std::to_string(generation) + "-rank" + std::to_string(world - 1));
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return sums;
}

}  // namespace

TEST_CASE("a restarted generation of ranks ignores what the dead one left in a lasting store",
          "[dist]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  for (const int world : {2, 3}) {
    INFO(world << " ranks");
    const double expected = world * (world + 1) / 2.0;
    CHECK(run_generation(store, world, /*generation=*/10 * world, /*late=*/-1) ==
          std::vector<double>(static_cast<size_t>(world), expected));
    // The restart's rank 0 comes first and finds the dead generation's addresses of the others
    // in the store; it must wait for the new ones instead of connecting to closed ports.
    CHECK(run_generation(store, world, /*generation=*/10 * world + 1, /*late=*/world - 1) ==
          std::vector<double>(static_cast<size_t>(world), expected));
  }
}
