// Signals in a training process: its handlers run on a thread of their own (core/interrupt.h),
// never on a thread that may be inside one of oneDNN's GEMM kernels, whose rsp then points into
// the heap. Before that, a burst of preemption notices crashed about three runs in five with
// glibc's heap checks ("corrupted size vs. prev_size").
#include "support/catch.h"

#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

struct ThreadSignals {
  std::string name;
  uint64_t blocked = 0;  // SigBlk: bit n-1 for signal n
};

std::vector<ThreadSignals> threads_of(int pid) {
  std::vector<ThreadSignals> threads;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    ThreadSignals t;
    std::getline(std::ifstream(task.path() / "comm"), t.name);
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("SigBlk:", 0) == 0) t.blocked = std::stoull(line.substr(7), nullptr, 16);
    }
    threads.push_back(t);
  }
  return threads;
}

bool blocks(const ThreadSignals& t, int signal) {
  return (t.blocked >> (signal - 1)) & 1U;
}

// The training process (single) or its ranks (ddp, started by dptrain's launcher).
std::vector<int> trainers(const BackgroundRun& run, bool ddp) {
  return ddp ? started_rank_pids(run.stderr_text(), -1) : std::vector<int>{run.pid()};
}

std::vector<std::string> backend_options(bool ddp) {
  if (ddp) return {"--set", "parallel.backend=ddp", "--set", "parallel.devices=[\"cpu\",\"cpu\"]"};
  return {"--set", "parallel.devices=cpu"};
}

}  // namespace

TEST_CASE("a training process takes its signals on one thread and every other thread blocks them",
          "[cli][signals]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  for (const bool ddp : {false, true}) {
    INFO((ddp ? "ddp" : "single"));
    auto args = momentum_sgd_job(dir / "data", backend_options(ddp), dir / (ddp ? "ddp" : "one"));
    args.insert(args.end(), {"--set", "log.every_steps=1", "--set", "data.num_workers=2"});
    BackgroundRun run(args);
    REQUIRE(run.wait_for_stderr("epoch 1 batch 5/100", 60));
    const std::vector<int> pids = trainers(run, ddp);
    CHECK(pids.size() == (ddp ? 2U : 1U));
    for (const int pid : pids) {
      const auto threads = threads_of(pid);
      CHECK(threads.size() >= 3);  // main, the signals' thread, the loader's workers and more
      int takers = 0;
      for (const auto& t : threads) {
        INFO("pid " << pid << " thread " << t.name << " SigBlk " << std::hex << t.blocked);
        if (t.name == "dptrain-signals") {
          ++takers;
          CHECK_FALSE((blocks(t, SIGINT) || blocks(t, SIGTERM) || blocks(t, SIGUSR1)));
        } else {
          CHECK((blocks(t, SIGINT) && blocks(t, SIGTERM) && blocks(t, SIGUSR1)));
        }
      }
      CHECK(takers == 1);
    }
    run.signal(SIGTERM);
    CHECK(run.finish(60).status == 75);
  }
}

TEST_CASE("a burst of preemption notices ends each run with a checkpoint and never crashes",
          "[cli][signals][resume]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  // single stops at the next step; ddp's ranks vote every 16 steps, so a burst lasts longer.
  const std::vector<bool> runs = {false, false, true, true};  // ddp?
  for (size_t i = 0; i < runs.size(); ++i) {
    const bool ddp = runs[i];
    INFO((ddp ? "ddp" : "single"));
    const auto out = dir / ("run-" + std::to_string(i));
    auto args = momentum_sgd_job(dir / "data", backend_options(ddp), out);
    args.insert(args.end(), {"--set", "log.every_steps=1"});
    BackgroundRun run(args);
    REQUIRE(run.wait_for_stderr("epoch 1 batch 5/100", 60));
    const std::vector<int> pids = trainers(run, ddp);
    REQUIRE(pids.size() == (ddp ? 2U : 1U));
    // As fast as this thread can send them, until every trainer has ended (or a minute passed).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (bool any = true; any && std::chrono::steady_clock::now() < deadline;) {
      any = false;
      for (const int pid : pids) {
        if (!process_alive(pid)) continue;
        any = true;
        for (int k = 0; k < 256; ++k) ::kill(pid, SIGUSR1);
      }
    }
    const auto stopped = run.finish(60);
    INFO(stopped.err);
    CHECK(stopped.status == 75);
    CHECK_THAT(stopped.err, ContainsSubstring("preempted: stopped by SIGUSR1 (a preemption "
                                              "notice) in epoch 1") &&
                                ContainsSubstring("; checkpoint written to " + out.string()));
  }
}
