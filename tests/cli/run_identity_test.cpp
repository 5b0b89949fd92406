// Runs keep to their own checkpoints: --overwrite leaves nothing of the earlier run that a resume
// could pick up, a resume never takes another run's checkpoint, and runs that share a
// checkpoint.dir never prune or resume each other's.
#include "support/catch.h"

#include <csignal>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// 400 images in batches of 40: 10 steps an epoch; a checkpoint after every epoch, two kept.
std::vector<std::string> job(const TempDir& dir, int epochs, const std::string& lr,
                             const std::filesystem::path& out) {
  std::vector<std::string> args = {"train", "--output", out.string()};
  for (const std::string& setting :
       {"data.dir=" + (dir / "data").string(), std::string("data.batch_size=40"),
        "train.epochs=" + std::to_string(epochs), "optimizer.lr=" + lr,
        std::string("runtime.threads=1"), std::string("parallel.devices=cpu"),
        std::string("checkpoint.keep_last=2")}) {
    args.insert(args.end(), {"--set", setting});
  }
  return args;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string run_id(const std::filesystem::path& run) {
  return nlohmann::json::parse(dptrain::core::read_text_file(run / "run.json")).at("run_id");
}

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

ProcessResult succeed(const std::vector<std::string>& args) {
  const auto r = run_dptrain(shell_words(args));
  INFO(r.err);
  REQUIRE(r.status == 0);
  return r;
}

}  // namespace

TEST_CASE("overwriting a run leaves nothing of it that a resume could pick up",
          "[cli][resume][runs]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  const auto run = dir / "run";
  succeed(job(dir, 3, "0.1", run));
  const std::string first = run_id(run);
  CHECK(files_in(run / "checkpoints") ==
        std::vector<std::string>{"epoch-0002.pt", "epoch-0003.pt"});

  // One epoch at another rate, over it: the new epoch-0001.pt was pruned at once by name, and
  // the old epoch-0003.pt resumed.
  succeed(with(job(dir, 1, "0.05", run), {"--overwrite"}));
  CHECK(run_id(run) != first);
  CHECK(files_in(run / "checkpoints") == std::vector<std::string>{"epoch-0001.pt"});
  CHECK(metrics_of(run).size() == 1);

  const auto resumed = succeed(with(job(dir, 2, "0.05", run), {"--resume", "auto"}));
  CHECK_THAT(resumed.err, ContainsSubstring("resumed from " + (run / "checkpoints").string() +
                                            "/epoch-0001.pt: epoch 2"));
  CHECK(metrics_of(run).size() == 2);
  // Beside --resume auto (an sbatch script's line holds both), --overwrite replaces the run on the
  // job's first start; its requeue (SLURM_RESTART_COUNT 1) goes on with the run that start began.
  const auto in_job = [](const std::string& job, int restarts) {
    return std::vector<std::string>{
        "SLURM_JOB_ID=" + job,      "SLURM_STEP_ID=0",
        "SLURM_PROCID=0",           "SLURM_NTASKS=1",
        "SLURM_NODELIST=localhost", "SLURM_RESTART_COUNT=" + std::to_string(restarts)};
  };
  const auto sbatch_line = [&](int epochs) {
    return shell_words(with(job(dir, epochs, "0.05", run), {"--overwrite", "--resume", "auto"}));
  };
  const std::string second = run_id(run);
  REQUIRE(run_dptrain(sbatch_line(2), {}, in_job("77", 0)).status == 0);
  const std::string third = run_id(run);
  CHECK(third != second);
  CHECK(metrics_of(run).size() == 2);
  const auto requeued = run_dptrain(sbatch_line(3), {}, in_job("77", 1));
  INFO(requeued.err);
  REQUIRE(requeued.status == 0);
  CHECK_THAT(requeued.err, ContainsSubstring("resumed from " + (run / "checkpoints").string() +
                                             "/epoch-0002.pt: epoch 3"));
  CHECK(run_id(run) == third);
  CHECK(metrics_of(run).size() == 3);
  CHECK(files_in(run / "checkpoints") ==
        std::vector<std::string>{"epoch-0002.pt", "epoch-0003.pt"});
  // A restart whose first attempt failed before it started finds another job's run there (as
  // here job 78 finds 77's): that is the run --overwrite replaces, not one to go on with.
  const auto other_job = run_dptrain(sbatch_line(1), {}, in_job("78", 1));
  REQUIRE(other_job.status == 0);
  CHECK(run_id(run) != third);
  CHECK(metrics_of(run).size() == 1);
}

TEST_CASE("an --overwrite whose start fails leaves the earlier run as it was",
          "[cli][resume][runs]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  const auto run = dir / "run";
  succeed(job(dir, 2, "0.1", run));
  const std::string first = run_id(run);
  write_text(dir / "damaged.pt", "PK\x03\x04 cut");
  const auto failed = run_dptrain(shell_words(with(
      job(dir, 1, "0.1", run), {"--overwrite", "--init-from", (dir / "damaged.pt").string()})));
  CHECK(failed.status == 5);
  CHECK(run_id(run) == first);
  CHECK(metrics_of(run).size() == 2);
  CHECK(files_in(run / "checkpoints") ==
        std::vector<std::string>{"epoch-0001.pt", "epoch-0002.pt"});
  const auto both = run_dptrain(shell_words(
      with(job(dir, 1, "0.1", run),
           {"--overwrite", "--resume", (run / "checkpoints" / "epoch-0001.pt").string()})));
  CHECK(both.status == 2);
  CHECK_THAT(both.err, ContainsSubstring("--overwrite starts a new run, and --resume "));
}

TEST_CASE("a checkpoint resumed by name begins a run of its own, or goes on with its own run",
          "[cli][resume][runs]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  succeed(job(dir, 2, "0.1", dir / "a"));
  succeed(job(dir, 2, "0.1", dir / "b"));
  const auto a1 = dir / "a" / "checkpoints" / "epoch-0001.pt";

  // Into the folder of another run: refused, naming both runs.
  const auto into_b =
      run_dptrain(shell_words(with(job(dir, 3, "0.1", dir / "b"), {"--resume", a1.string()})));
  CHECK(into_b.status == 5);
  CHECK_THAT(into_b.err, ContainsSubstring(a1.string() + ": a checkpoint of run " +
                                           run_id(dir / "a") + ", but " + (dir / "b").string() +
                                           " holds run " + run_id(dir / "b")));

  // Into a folder of its own: a new run, which remembers where it began.
  const auto fork = dir / "fork";
  succeed(with(job(dir, 2, "0.1", fork), {"--resume", a1.string()}));
  const auto record = nlohmann::json::parse(dptrain::core::read_text_file(fork / "run.json"));
  CHECK(record.at("run_id") != run_id(dir / "a"));
  CHECK(record.at("resumed_from") == std::filesystem::absolute(a1).string());
  CHECK(record.at("resumed_from_run") == run_id(dir / "a"));
  // Its requeue with the same line is no other run's; a restart that finds no checkpoint of the
  // run's own (as after a crash before its first) goes on from where it began, not from scratch.
  succeed(with(job(dir, 2, "0.1", fork), {"--resume", a1.string()}));
  std::filesystem::remove_all(fork / "checkpoints");
  const auto restart = succeed(with(job(dir, 2, "0.1", fork), {"--resume", "auto"}));
  CHECK_THAT(restart.err,
             ContainsSubstring("going on from " + std::filesystem::absolute(a1).string() +
                               ", where it began"));
  CHECK_THAT(restart.err, ContainsSubstring("resumed from " +
                                            std::filesystem::absolute(a1).string() + ": epoch 2"));
}

TEST_CASE("resuming never takes another run's checkpoint", "[cli][resume][runs]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  succeed(job(dir, 1, "0.1", dir / "a"));
  succeed(job(dir, 1, "0.1", dir / "b"));
  // Run a's checkpoint, copied among run b's as if newer.
  const auto planted = dir / "b" / "checkpoints" / "epoch-0005.pt";
  std::filesystem::copy_file(dir / "a" / "checkpoints" / "epoch-0001.pt", planted);
  const auto r =
      run_dptrain(shell_words(with(job(dir, 6, "0.1", dir / "b"), {"--resume", "auto"})));
  CHECK(r.status == 5);
  CHECK_THAT(r.err, ContainsSubstring(planted.string() + ": a checkpoint of run " +
                                      run_id(dir / "a") + ", not of run " + run_id(dir / "b")));
  CHECK_THAT(r.err, ContainsSubstring("hint: remove it, or resume it by name"));
}

TEST_CASE("runs that share a checkpoint.dir keep their checkpoints apart", "[cli][runs]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  const auto shared = dir / "shared";
  const std::vector<std::string> in_shared = {"--set", "checkpoint.dir=" + shared.string()};
  succeed(with(job(dir, 3, "0.1", dir / "a"), in_shared));
  succeed(with(job(dir, 3, "0.1", dir / "b"), in_shared));
  // Each run keeps its last two in a folder of its own id: b's pruning left a's alone.
  for (const char* run : {"a", "b"}) {
    INFO(run);
    CHECK(files_in(shared / run_id(dir / run)) ==
          std::vector<std::string>{"epoch-0002.pt", "epoch-0003.pt"});
  }
  const auto resumed =
      succeed(with(with(job(dir, 4, "0.1", dir / "a"), in_shared), {"--resume", "auto"}));
  CHECK_THAT(resumed.err,
             ContainsSubstring("resumed from " + (shared / run_id(dir / "a")).string() +
                               "/epoch-0003.pt"));
}

TEST_CASE("a second training into a folder in use is refused until the first has ended",
          "[cli][runs]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 30);
  const auto out = dir / "a";
  // 20 epochs of 100 steps: still training while the others try.
  BackgroundRun first(with(job(dir, 20, "0.1", out), {"--set", "log.every_steps=1"}));
  REQUIRE(first.wait_for_stderr("(step 3)", 120));
  for (const auto& how :
       {std::vector<std::string>{"--resume", "auto"}, std::vector<std::string>{"--overwrite"}}) {
    const auto second = run_dptrain(shell_words(with(job(dir, 2, "0.1", out), how)));
    INFO(second.err);
    CHECK(second.status == 5);
    CHECK_THAT(second.err,
               ContainsSubstring(out.string() + ": another dptrain is training into this folder"));
  }
  first.signal(SIGINT);
  const auto stopped = first.finish(120);
  CHECK(stopped.status == 130);
  // The lock went with its process: the folder takes a run again.
  const auto replaced = run_dptrain(shell_words(with(job(dir, 1, "0.1", out), {"--overwrite"})));
  INFO(replaced.err);
  CHECK(replaced.status == 0);
}
