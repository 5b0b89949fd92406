// A run's folder after it goes back: a resume from an earlier checkpoint starts a new branch that
// `--resume auto` and every hint keep to, and each metrics file is rebuilt to exactly the point a
// run resumes from. Also what a resumed run says about its thread count and what it clears.
#include "support/catch.h"

#include <unistd.h>

#include <csignal>
#include <regex>
#include <set>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// 3000 images in batches of 30, two epochs of 100 steps, a checkpoint every 10 steps (all kept)
// and a log line every step (so that a test can stop it where it wants).
std::vector<std::string> rewind_job(const TempDir& dir, const std::filesystem::path& out,
                                    const std::vector<std::string>& more = {}) {
  std::vector<std::string> extra = {
      "--set", "parallel.devices=cpu",   "--set", "checkpoint.every_steps=10",
      "--set", "checkpoint.keep_last=0", "--set", "log.every_steps=1"};
  extra.insert(extra.end(), more.begin(), more.end());
  return momentum_sgd_job(dir / "data", extra, out);
}

// Starts `args`, preempts it with SIGTERM once stderr shows `seen`, and returns the checkpoint
// its message names.
std::filesystem::path preempt_after(const std::vector<std::string>& args, const std::string& seen) {
  BackgroundRun run(args);
  const bool reached = run.wait_for_stderr(seen, 120);
  INFO(run.stderr_text());
  REQUIRE(reached);
  run.signal(SIGTERM);
  const auto stopped = run.finish(120);
  INFO(stopped.err);
  REQUIRE(stopped.status == 75);
  std::smatch m;
  static const std::regex kWritten("checkpoint written to (\\S+\\.pt)");
  REQUIRE(std::regex_search(stopped.err, m, kWritten));
  CHECK_THAT(stopped.err, ContainsSubstring("--resume auto"));
  return m[1].str();
}

std::vector<std::filesystem::path> abandoned_folders(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("abandoned-", 0) == 0) found.push_back(e.path());
  }
  return found;
}

// The event file's epoch figures are metrics.jsonl's, no step is there twice, and TensorBoard's
// HParams view has the run once.
void check_event_file(const std::filesystem::path& run, size_t epochs) {
  if (!python_event_reader_present()) {
    WARN("the event file is not read back: no python3-protobuf and python3-crc32c");
    return;
  }
  const auto events = read_events(run);
  const auto& scalars = events.at("scalars");
  const auto metrics = metrics_of(run);
  REQUIRE(metrics.size() == epochs);
  const auto points =
      scalars.contains("epoch/test_acc") ? scalars.at("epoch/test_acc") : nlohmann::json::array();
  REQUIRE(points.size() == epochs);
  for (size_t e = 0; e < epochs; ++e) {
    CHECK(points[e][0] == metrics[e].at("global_step"));
    CHECK(points[e][1].get<double>() ==
          static_cast<double>(static_cast<float>(metrics[e].at("test_acc").get<double>())));
  }
  const auto& hparams = events.at("hparams");
  CHECK(hparams.at("_hparams_/experiment").size() == 1);
  CHECK(hparams.at("_hparams_/session_start_info").size() == 1);
  std::set<int64_t> steps;
  for (const auto& p : scalars.at("step/train_loss")) {
    CHECK(steps.insert(p[0].get<int64_t>()).second);
  }
}

}  // namespace

TEST_CASE(
    "a resume from an earlier checkpoint starts a new branch that --resume auto and the "
    "hint keep to, with every metrics file rebuilt to that point",
    "[cli][resume][rewind][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  const auto run = dir / "run";
  REQUIRE(run_dptrain(shell_words(rewind_job(dir, run))).status == 0);
  const auto uninterrupted = load_parameters(run / "model.pt");

  // Back to epoch 1 in the same folder, preempted in the new epoch 2.
  auto rewind = rewind_job(dir, run);
  rewind.insert(rewind.end(), {"--resume", (run / "checkpoints" / "epoch-0001.pt").string()});
  const auto written = preempt_after(rewind, "epoch 2 batch 5/100");
  // The abandoned branch's 10 later checkpoints (steps 110 to 200) and its results went aside.
  const auto aside = abandoned_folders(run / "checkpoints");
  REQUIRE(aside.size() == 1);
  CHECK(std::filesystem::exists(aside[0] / "epoch-0002.pt"));
  CHECK(std::filesystem::exists(aside[0] / "epoch-0001-batch-000090.pt"));
  CHECK_FALSE(std::filesystem::exists(run / "checkpoints" / "epoch-0002.pt"));
  const auto results_aside = abandoned_folders(run);
  REQUIRE(results_aside.size() == 1);
  CHECK(std::filesystem::exists(results_aside[0] / "summary.json"));
  CHECK(std::filesystem::exists(results_aside[0] / "model.pt"));
  CHECK_FALSE(std::filesystem::exists(run / "summary.json"));
  CHECK(metrics_of(run).size() == 1);

  // The hint's own command goes on from the checkpoint the hint named, and ends where the
  // uninterrupted run ended.
  auto resume = rewind_job(dir, run);
  resume.insert(resume.end(), {"--resume", "auto"});
  const auto resumed = run_dptrain(shell_words(resume));
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.err, ContainsSubstring("resumed from " + written.string() + ":"));
  CHECK(max_relative_difference(load_parameters(run / "model.pt"), uninterrupted) == 0);
  check_event_file(run, 2);

  // Back to the abandoned branch's own last checkpoint, from its folder: a history of its own,
  // so every checkpoint of the branch that trained since goes aside in turn.
  auto back = rewind_job(dir, run);
  back.insert(back.end(), {"--resume", (aside[0] / "epoch-0002.pt").string()});
  const auto returned = run_dptrain(shell_words(back));
  INFO(returned.err);
  REQUIRE(returned.status == 0);
  CHECK(abandoned_folders(run / "checkpoints").size() == 2);
  for (const auto& e : std::filesystem::directory_iterator(run / "checkpoints")) {
    CHECK(e.path().filename().string().rfind("abandoned-", 0) == 0);
  }

  // --overwrite takes the abandoned branches with the rest.
  auto again = rewind_job(dir, run, {"--set", "train.epochs=1"});
  again.push_back("--overwrite");
  REQUIRE(run_dptrain(shell_words(again)).status == 0);
  CHECK(abandoned_folders(run).empty());
  CHECK(abandoned_folders(run / "checkpoints").empty());
}

TEST_CASE(
    "a resume before the first finished epoch rewrites the metrics files without the "
    "epochs a killed part left there",
    "[cli][resume][rewind][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  const auto run = dir / "run";
  REQUIRE(run_dptrain(shell_words(rewind_job(dir, run))).status == 0);
  const auto uninterrupted = load_parameters(run / "model.pt");
  // Killed in epoch 1 after step 50's checkpoint, as if its later files had never been written,
  // but with metrics.jsonl and metrics.csv of both epochs left behind.
  for (const auto& e : std::filesystem::directory_iterator(run / "checkpoints")) {
    if (e.path().filename() != "epoch-0000-batch-000050.pt") std::filesystem::remove(e.path());
  }
  std::filesystem::remove(run / "summary.json");
  std::filesystem::remove(run / "model.pt");
  REQUIRE(metrics_of(run).size() == 2);

  auto resume = rewind_job(dir, run);
  resume.insert(resume.end(), {"--resume", "auto"});
  preempt_after(resume, "epoch 1 batch 60/100");
  CHECK(metrics_of(run).empty());
  const std::string csv = dptrain::core::read_text_file(run / "metrics.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1);  // the header alone
  check_event_file(run, 0);

  const auto resumed = run_dptrain(shell_words(resume));
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK(max_relative_difference(load_parameters(run / "model.pt"), uninterrupted) == 0);
  check_event_file(run, 2);
}

TEST_CASE(
    "a resume with another thread count says that the run will differ from an "
    "uninterrupted one, and summary.json records the count",
    "[cli][resume][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto run = dir / "run";
  REQUIRE(run_dptrain(shell_words(rewind_job(dir, run, {"--set", "train.epochs=1"}))).status == 0);
  CHECK(summary_of(run).at("threads") == 1);
  auto more = rewind_job(dir, run, {"--set", "runtime.threads=2", "--set", "optimizer.lr=0.1"});
  more.insert(more.end(), {"--resume", "auto"});
  const auto resumed = run_dptrain(shell_words(more));
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.err, ContainsSubstring("it was trained with 1 thread(s) and this run has 2") &&
                              ContainsSubstring("add --set runtime.threads=1 to keep them equal"));
  // Settings are named as --set spells them, never as JSON pointers.
  CHECK_THAT(resumed.err, ContainsSubstring(": optimizer.lr was 0.05 and is now 0.1;") &&
                              !ContainsSubstring("/optimizer/lr"));
  CHECK(summary_of(run).at("threads") == 2);
  // The same count again: not a word.
  auto same = rewind_job(
      dir, run,
      {"--set", "runtime.threads=2", "--set", "train.epochs=3", "--set", "optimizer.lr=0.1"});
  same.insert(same.end(), {"--resume", "auto"});
  const auto quiet = run_dptrain(shell_words(same));
  REQUIRE(quiet.status == 0);
  CHECK_THAT(quiet.err, !ContainsSubstring("thread(s)"));
}

TEST_CASE(
    "a resumed run removes every temporary file in its locked folder, even one that "
    "names a running process",
    "[cli][resume]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto run = dir / "run";
  REQUIRE(run_dptrain(shell_words(rewind_job(dir, run, {"--set", "train.epochs=1"}))).status == 0);
  // A killed part's temporaries, named with a pid that runs now (this test's), as a container's
  // restarted job can have its killed predecessor's pid.
  const std::string pid = std::to_string(::getpid());
  const auto left = {run / ("metrics.jsonl.tmp." + pid + ".0123456789abcdef"),
                     run / "checkpoints" / ("epoch-0002.pt.tmp." + pid + ".fedcba9876543210")};
  for (const auto& file : left) write_text(file, "half");
  write_text(run / "results.csv.tmp.2024", "a user's own");
  auto more = rewind_job(dir, run);
  more.insert(more.end(), {"--resume", "auto"});
  const auto resumed = run_dptrain(shell_words(more));
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  for (const auto& file : left) CHECK_FALSE(std::filesystem::exists(file));
  CHECK(std::filesystem::exists(run / "results.csv.tmp.2024"));  // a user's, not of that form
  CHECK_THAT(
      resumed.err,
      ContainsSubstring("removed 1 temporary file(s) that a killed run left in " + run.string()));
}
