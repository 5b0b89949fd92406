// Signals in a training process: its handlers run on a thread of their own (core/interrupt.h),
// never on a thread that may be inside one of oneDNN's GEMM kernels, whose rsp then points into
// the heap. Before that, a burst of preemption notices crashed about three runs in five with
// glibc's heap checks ("corrupted size vs. prev_size").
#include "support/catch.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
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

// A thread that ended while this read the folder is left out.
std::vector<ThreadSignals> threads_of(int pid) {
  std::vector<ThreadSignals> threads;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    ThreadSignals t;
    bool read = false;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Name:", 0) == 0) t.name = line.substr(line.find_first_not_of(" \t", 5));
      if (line.rfind("SigBlk:", 0) != 0) continue;
      t.blocked = std::stoull(line.substr(7), nullptr, 16);
      read = true;
    }
    if (read) threads.push_back(t);
  }
  return threads;
}

// Sends `signal` to the process behind a pidfd (never to a later process given the same pid);
// false once it has ended.
bool signal_if_running(int pidfd, int signal) {
  pollfd ended{pidfd, POLLIN, 0};
  if (::poll(&ended, 1, 0) != 0) return false;
  ::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0);
  return true;
}

bool blocks(const ThreadSignals& t, int signal) {
  return (t.blocked >> (signal - 1)) & 1U;
}

// The training process (single) or its ranks (ddp, started by dptrain's launcher).
std::vector<int> trainers(const BackgroundRun& run, bool ddp) {
  return ddp ? started_rank_pids(run.stderr_text(), -1) : std::vector<int>{run.pid()};
}

}  // namespace

TEST_CASE("a training process takes its signals on one thread and every other thread blocks them",
          "[cli][signals]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  for (const bool ddp : {false, true}) {
    INFO((ddp ? "ddp" : "single"));
    auto args = momentum_sgd_job(dir / "data", on_cpu_backend(ddp ? "ddp" : "single"),
                                 dir / (ddp ? "ddp" : "one"));
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
    auto args = momentum_sgd_job(dir / "data", on_cpu_backend(ddp ? "ddp" : "single"), out);
    args.insert(args.end(), {"--set", "log.every_steps=1"});
    BackgroundRun run(args);
    REQUIRE(run.wait_for_stderr("epoch 1 batch 5/100", 60));
    const std::vector<int> pids = trainers(run, ddp);
    REQUIRE(pids.size() == (ddp ? 2U : 1U));
    std::vector<int> pidfds;
    for (const int pid : pids) {
      pidfds.push_back(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    }
    CHECK(std::count(pidfds.begin(), pidfds.end(), -1) == 0);
    // As fast as this thread can send them, until every trainer has ended (or a minute passed).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (bool any = true; any && std::chrono::steady_clock::now() < deadline;) {
      any = false;
      for (const int fd : pidfds) {
        for (int k = 0; k < 256 && fd >= 0 && signal_if_running(fd, SIGUSR1); ++k) any = true;
      }
    }
    for (const int fd : pidfds) ::close(fd);
    const auto stopped = run.finish(60);
    INFO(stopped.err);
    CHECK(stopped.status == 75);
    CHECK_THAT(stopped.err, ContainsSubstring("preempted: stopped by SIGUSR1 (a preemption "
                                              "notice) in epoch 1") &&
                                ContainsSubstring("; checkpoint written to " + out.string()));
  }
}
