// dptrain's launcher restarting a ddp job (--max-restarts): a rank killed or hung mid-epoch, and
// the job still ends with an uninterrupted run's parameters; restarts that run out, and a rank
// that cannot start, end the job with every cause named.
#include "support/catch.h"

#include <chrono>
#include <csignal>
#include <thread>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// 3000 images in batches of 30, 100 steps an epoch: long enough to be hit in the middle. A
// checkpoint every 5 steps, momentum on.
std::vector<std::string> job(const TempDir& dir, int world, const std::filesystem::path& out) {
  std::string devices = "parallel.devices=[\"cpu\"";
  for (int r = 1; r < world; ++r) devices += ",\"cpu\"";
  devices += "]";
  std::vector<std::string> args = {"train", "--output", out.string()};
  for (const std::string& setting :
       {"data.dir=" + (dir / "data").string(), std::string("data.batch_size=30"),
        std::string("train.epochs=2"), std::string("model.init_std=0.1"),
        std::string("optimizer.lr=0.05"), std::string("optimizer.momentum=0.9"),
        std::string("runtime.threads=1"), std::string("parallel.backend=ddp"), devices,
        std::string("parallel.timeout_s=10"), std::string("checkpoint.every_steps=5"),
        std::string("log.every_steps=1")}) {
    args.insert(args.end(), {"--set", setting});
  }
  return args;
}

// The pid of `rank` in its `start`-th start (1: the first), from the launcher's log.
int pid_of_rank(BackgroundRun& run, int rank, int start) {
  for (int waited = 0; waited < 600; ++waited) {
    const std::vector<int> pids = started_rank_pids(run.stderr_text(), rank);
    if (pids.size() >= static_cast<size_t>(start)) return pids[static_cast<size_t>(start) - 1];
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  FAIL("rank " << rank << " did not start a " << start << "th time:\n" << run.stderr_text());
  return -1;
}

}  // namespace

TEST_CASE(
    "a rank killed or stopped mid-epoch restarts the job, which ends as an uninterrupted "
    "one",
    "[cli][restart][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  struct Case {
    int world;
    int signal;
    int zero_stage;
  };
  // ZeRO stage 2 too: its restart gathers the optimizer's state from a checkpoint of shards.
  for (const Case c :
       {Case{2, SIGKILL, 0}, Case{3, SIGKILL, 0}, Case{2, SIGSTOP, 0}, Case{2, SIGKILL, 2}}) {
    INFO(c.world << " ranks, signal " << c.signal << ", zero_stage " << c.zero_stage);
    const std::string name = std::to_string(c.world) + "-" + std::to_string(c.signal) + "-" +
                             std::to_string(c.zero_stage);
    const std::vector<std::string> zero = {"--set",
                                           "parallel.zero_stage=" + std::to_string(c.zero_stage)};
    const auto whole = dir / ("whole-" + name);
    auto whole_args = job(dir, c.world, whole);
    whole_args.insert(whole_args.end(), zero.begin(), zero.end());
    const auto uninterrupted = run_dptrain(shell_words(whole_args));
    INFO(uninterrupted.err);
    REQUIRE(uninterrupted.status == 0);

    const auto cut = dir / ("cut-" + name);
    auto args = job(dir, c.world, cut);
    args.insert(args.end(), zero.begin(), zero.end());
    args.insert(args.end(), {"--max-restarts", "2"});
    BackgroundRun run(args);
    const int victim = pid_of_rank(run, c.world - 1, 1);
    REQUIRE(run.wait_for_stderr("epoch 1 batch 12/100", 60));
    ::kill(victim, c.signal);
    const auto result = run.finish(180);
    INFO(result.err);
    REQUIRE(result.status == 0);
    const std::string cause = c.signal == SIGKILL
                                  ? "ddp: rank " + std::to_string(c.world - 1) +
                                        " was killed by signal 9 (Killed); restart 1 of 2"
                                  : "restart 1 of 2: every rank starts again";
    CHECK_THAT(result.err, ContainsSubstring(cause));
    CHECK_THAT(result.err, ContainsSubstring("from dptrain, restart 1"));
    CHECK_THAT(result.err, ContainsSubstring("resumed from " + cut.string() + "/checkpoints/"));
    CHECK(max_relative_difference(load_parameters(cut / "model.pt"),
                                  load_parameters(whole / "model.pt")) == 0);
    CHECK(metrics_of(cut).size() == 2);
    CHECK(summary_of(cut).at("test_correct") == summary_of(whole).at("test_correct"));
  }
}

TEST_CASE("a second kill with --max-restarts 1 ends the job with its status, naming both",
          "[cli][restart]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  auto args = job(dir, 2, dir / "run");
  args.insert(args.end(), {"--max-restarts", "1"});
  BackgroundRun run(args);
  const int first = pid_of_rank(run, 1, 1);
  REQUIRE(run.wait_for_stderr("epoch 1 batch 7/100", 60));
  ::kill(first, SIGKILL);
  const int second = pid_of_rank(run, 1, 2);
  REQUIRE(run.wait_for_stderr("restart 1", 60));
  ::kill(second, SIGKILL);
  const auto result = run.finish(120);
  INFO(result.err);
  CHECK(result.status == 128 + SIGKILL);
  CHECK_THAT(result.err,
             ContainsSubstring("ddp: gave up after 1 restart (restart 1 after rank 1 was killed by "
                               "signal 9 (Killed)): the last failure ends the job"));
  CHECK_THAT(result.err, ContainsSubstring("ddp: rank 1 of 2 (pid " + std::to_string(second) +
                                           ") was killed by signal 9 (Killed)"));
}

TEST_CASE("a rank that fails at every start ends the job once the restarts are spent",
          "[cli][restart][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 300, 30);
  auto args = job(dir, 2, dir / "run");
  args.insert(args.end(), {"--max-restarts", "2"});
  // Rank 1 dies as soon as it has started, each time (a device missing from this machine is
  // refused before any rank starts, so it cannot be the cause here).
  BackgroundRun run(args);
  for (int start = 1; start <= 3; ++start) ::kill(pid_of_rank(run, 1, start), SIGKILL);
  const auto result = run.finish(120);
  INFO(result.err);
  CHECK(result.status != 0);
  CHECK_THAT(result.err, ContainsSubstring("restart 2 of 2"));
  CHECK_THAT(result.err, ContainsSubstring("ddp: gave up after 2 restarts (restart 1 after rank 1 "
                                           "was killed by signal 9 (Killed)"));
}

TEST_CASE("restarts need the run's folder and one machine", "[cli][restart]") {
  const auto no_output = run_dptrain(
      "train --set parallel.backend=ddp --set 'parallel.devices=[\"cpu\",\"cpu\"]' "
      "--max-restarts 1");
  CHECK(no_output.status == 2);
  CHECK_THAT(no_output.err,
             ContainsSubstring("restarts resume from the run's checkpoints, but there is no "
                               "--output"));
  const auto nodes = run_dptrain(
      "train --set parallel.backend=ddp --set 'parallel.devices=[\"cpu\",\"cpu\"]' --nnodes 2 "
      "--node-rank 0 --master-addr 127.0.0.1 --master-port 29999 --output /nonexistent/x "
      "--max-restarts 1");
  CHECK(nodes.status == 2);
  CHECK_THAT(nodes.err, ContainsSubstring("restarts (--max-restarts, parallel.max_restarts) are "
                                          "for one machine: with --nnodes 2"));
  CHECK_THAT(nodes.err, ContainsSubstring("torchrun --max_restarts, or SLURM's requeue"));
  // Restarts resume from checkpoints: a run that writes none would start over each time.
  const auto none = run_dptrain(
      "train --set parallel.backend=ddp --set 'parallel.devices=[\"cpu\",\"cpu\"]' --output "
      "/nonexistent/x --max-restarts 1 --set checkpoint.every_epochs=0");
  CHECK(none.status == 3);
  CHECK_THAT(none.err, ContainsSubstring("checkpoint.every_epochs and checkpoint.every_steps are "
                                         "both 0: every restart would start over from the first "
                                         "epoch"));
  // --max-restarts where no launcher of dptrain's starts ranks, and evaluate, which ignores the
  // key in the run's config.
  const auto single = run_dptrain("train --set parallel.devices=cpu --max-restarts 1");
  CHECK(single.status == 2);
  CHECK_THAT(single.err, ContainsSubstring("--max-restarts restarts the ranks that dptrain's "
                                           "launcher starts, and this run has no ranks to launch"));
  TempDir dir;
  write_tiny_dataset(dir / "data", 60, 30);
  const std::string ddp_run =
      "--set data.dir=" + (dir / "data").string() +
      " --set data.batch_size=30 --set train.epochs=1 --set runtime.threads=1"
      " --set parallel.backend=ddp --set 'parallel.devices=[\"cpu\",\"cpu\"]'"
      " --set parallel.max_restarts=2";
  REQUIRE(run_dptrain("train " + ddp_run + " --output " + (dir / "run").string()).status == 0);
  const auto evaluated = run_dptrain("evaluate --model " + (dir / "run" / "model.pt").string() +
                                     " --config " + (dir / "run" / "config.json").string());
  INFO(evaluated.err);
  CHECK(evaluated.status == 0);
}

TEST_CASE("a rank stuck in a collective acts on a preemption notice within 10 s, not the timeout",
          "[cli][restart][slow][timed]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  auto args = job(dir, 2, dir / "run");
  // Restarts allowed, yet a preemption notice ends the job: the scheduler takes the machine.
  args.insert(args.end(), {"--set", "parallel.timeout_s=120", "--max-restarts", "2"});
  BackgroundRun run(args);
  const int stuck = pid_of_rank(run, 1, 1);
  REQUIRE(run.wait_for_stderr("epoch 1 batch 7/100", 60));
  ::kill(stuck, SIGSTOP);  // rank 0 now waits for it in its next all-reduce
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto noticed = std::chrono::steady_clock::now();
  run.signal(SIGTERM);  // as torchrun and SLURM stop a job's workers
  const auto result = run.finish(60);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - noticed).count();
  INFO(result.err);
  // The stopped rank is the culprit: the launcher kills it after the others have stopped.
  CHECK(result.status == 128 + SIGKILL);
  CHECK_THAT(result.err, ContainsSubstring("ddp: rank 1 of 2 (pid " + std::to_string(stuck) +
                                           ") was killed by signal 9 (Killed)"));
  // Which collective rank 0 waits in depends on where the stop fell (a gradient bucket, the vote,
  // the running sums): any will do.
  CHECK_THAT(result.err, ContainsSubstring("SIGTERM (a preemption notice) came while this rank "
                                           "waited for the "));
  CHECK_THAT(result.err, !ContainsSubstring("restart 1 of 2"));
  // 10 s for the notice, 5 s for the launcher's grace before it kills the stopped rank.
  CHECK(seconds < 25);
}

TEST_CASE(
    "a preemption notice that reaches the ranks while they are still starting stops them with a "
    "checkpoint, not with SIGTERM's default death",
    "[cli][restart]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  BackgroundRun run(job(dir, 2, dir / "run"));
  // Both ranks forked, neither yet past loading LibTorch: SIGTERM's default action would kill them
  // (143, a crash to SLURM) if the launcher did not hold the signal until their handlers are in.
  pid_of_rank(run, 1, 1);
  run.signal(SIGTERM);
  const auto result = run.finish(120);
  INFO(result.err);
  CHECK(result.status == 75);
  CHECK_THAT(result.err,
             ContainsSubstring("ddp: preempted: every rank stopped after the same step"));
  CHECK_THAT(result.err, ContainsSubstring("checkpoint written to " + (dir / "run").string()));
}
