// Preemption and resume as a batch job meets them: a SIGTERM or SIGUSR1 mid-epoch ends the run
// after the current step with a checkpoint and exit status 75, and `--resume auto` then finishes
// it with the parameters an uninterrupted run ends with, on every backend.
#include "support/catch.h"

#include <algorithm>
#include <csignal>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// 3000 images in batches of 30: 100 steps an epoch, long enough to be stopped in the middle.
std::vector<std::string> job(const TempDir& dir, const std::vector<std::string>& backend,
                             const std::filesystem::path& out) {
  return momentum_sgd_job(dir / "data", backend, out);
}

}  // namespace

TEST_CASE("a preempted run resumes to the parameters of an uninterrupted one",
          "[cli][resume][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  struct Case {
    std::string name;
    std::vector<std::string> backend;
    int signal;
    std::string signal_name;
  };
  const std::vector<Case> cases = {
      {"single", {"--set", "parallel.devices=cpu"}, SIGTERM, "SIGTERM"},
      {"dp",
       {"--set", "parallel.backend=dp", "--set", "parallel.devices=[\"cpu\",\"cpu\"]"},
       SIGUSR1,
       "SIGUSR1"},
      {"ddp",
       {"--set", "parallel.backend=ddp", "--set", "parallel.devices=[\"cpu\",\"cpu\"]"},
       SIGTERM,
       "SIGTERM"}};
  for (const auto& c : cases) {
    INFO(c.name);
    const auto whole = dir / (c.name + "-whole");
    REQUIRE(run_dptrain(shell_words(job(dir, c.backend, whole))).status == 0);

    const auto cut = dir / (c.name + "-cut");
    auto args = job(dir, c.backend, cut);
    args.insert(args.end(), {"--set", "log.every_steps=1"});
    BackgroundRun run(args);
    REQUIRE(run.wait_for_stderr("epoch 1 batch 5/100", 60));
    run.signal(c.signal);
    const auto stopped = run.finish(60);
    INFO(stopped.err);
    CHECK(stopped.status == 75);
    CHECK_THAT(stopped.err, ContainsSubstring("preempted: stopped by " + c.signal_name +
                                              " (a preemption notice) in epoch ") &&
                                ContainsSubstring("; checkpoint written to " + cut.string() +
                                                  "/checkpoints/epoch-000"));
    bool mid_epoch = false;
    for (const auto& e : std::filesystem::directory_iterator(cut / "checkpoints")) {
      mid_epoch |= e.path().filename().string().find("-batch-") != std::string::npos;
    }
    CHECK(mid_epoch);

    auto resume = job(dir, c.backend, cut);
    resume.insert(resume.end(), {"--resume", "auto"});
    const auto resumed = run_dptrain(shell_words(resume));
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    CHECK_THAT(resumed.err, ContainsSubstring("resumed from " + cut.string() + "/checkpoints/"));
    CHECK(max_relative_difference(load_parameters(cut / "model.pt"),
                                  load_parameters(whole / "model.pt")) == 0);
    const std::string metrics = dptrain::core::read_text_file(cut / "metrics.jsonl");
    CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 2);
    CHECK(summary_of(cut).at("test_acc") == summary_of(whole).at("test_acc"));
  }
}

TEST_CASE("resume takes a checkpoint that exists, and auto needs the run's folder",
          "[cli][resume]") {
  TempDir dir;
  const auto missing = run_dptrain("train --resume " + (dir / "none.pt").string());
  CHECK(missing.status == 5);
  CHECK_THAT(missing.err, ContainsSubstring((dir / "none.pt").string() + ": no such checkpoint"));
  const auto no_output = run_dptrain("train --resume auto");
  CHECK(no_output.status == 2);
  CHECK_THAT(no_output.err, ContainsSubstring("--resume auto looks for checkpoints in the run's "
                                              "folder, but there is no --output"));
}

TEST_CASE("Adam with a warmed-up cosine schedule and accumulation resumes mid-epoch exactly",
          "[cli][resume][optim][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  // 100 batches an epoch, 2 per optimizer step: 50 steps an epoch, 100 in the run.
  const std::vector<std::string> options = {"--set", "optimizer.name=adam",
                                            "--set", "optimizer.momentum=0",
                                            "--set", "optimizer.lr=0.01",
                                            "--set", "scheduler.name=cosine",
                                            "--set", "scheduler.min_lr=0.001",
                                            "--set", "scheduler.warmup_steps=10",
                                            "--set", "train.accumulate_grad_batches=2"};
  for (const std::string backend : {"single", "ddp"}) {
    INFO(backend);
    std::vector<std::string> placement = on_cpu_backend(backend);
    placement.insert(placement.end(), options.begin(), options.end());
    const auto whole = dir / (backend + "-whole");
    const auto uninterrupted = run_dptrain(shell_words(job(dir, placement, whole)));
    INFO(uninterrupted.err);
    REQUIRE(uninterrupted.status == 0);
    CHECK_THAT(uninterrupted.err, ContainsSubstring("optimizer adam: 100 steps of 60 samples"));

    const auto cut = dir / (backend + "-cut");
    auto args = job(dir, placement, cut);
    args.insert(args.end(), {"--set", "log.every_steps=1"});
    BackgroundRun run(args);
    REQUIRE(run.wait_for_stderr("epoch 1 batch 10/100", 60));
    run.signal(SIGTERM);
    const auto stopped = run.finish(60);
    INFO(stopped.err);
    REQUIRE(stopped.status == 75);

    auto resume = job(dir, placement, cut);
    resume.insert(resume.end(), {"--resume", "auto"});
    const auto resumed = run_dptrain(shell_words(resume));
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    CHECK(max_relative_difference(load_parameters(cut / "model.pt"),
                                  load_parameters(whole / "model.pt")) == 0);
    const auto epochs_cut = metrics_of(cut);
    const auto epochs_whole = metrics_of(whole);
    REQUIRE(epochs_cut.size() == 2);
    REQUIRE(epochs_whole.size() == 2);
    for (size_t e = 0; e < 2; ++e) {
      CHECK(epochs_cut[e].at("lr") == epochs_whole[e].at("lr"));
      CHECK(epochs_cut[e].at("global_step") == epochs_whole[e].at("global_step"));
      CHECK(epochs_cut[e].at("train_loss") == epochs_whole[e].at("train_loss"));
    }
    // The last step's rate, 89 of the cosine's 90 steps after the warm-up.
    const double pi = std::acos(-1.0);
    CHECK(epochs_whole[1].at("lr").get<double>() ==
          Approx(0.001 + 0.009 * (1 + std::cos(pi * 89 / 90)) / 2).epsilon(1e-12));
    CHECK(epochs_whole[1].at("global_step") == 100);
  }
}

TEST_CASE("checkpoint.every_steps checkpoints within epochs, and each resumes exactly",
          "[cli][resume][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  // 20 batches of 30 an epoch; a checkpoint every 5 steps and at each epoch's end.
  for (const std::string backend : {"single", "ddp"}) {
    INFO(backend);
    std::vector<std::string> options = on_cpu_backend(backend);
    options.insert(options.end(), {"--set", "checkpoint.every_steps=5", "--set",
                                   "checkpoint.every_epochs=0", "--set", "checkpoint.keep_last=0"});
    const auto whole = dir / (backend + "-whole");
    const auto uninterrupted = run_dptrain(shell_words(job(dir, options, whole)));
    INFO(uninterrupted.err);
    REQUIRE(uninterrupted.status == 0);
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(whole / "checkpoints")) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    CHECK(names ==
          std::vector<std::string>{"epoch-0000-batch-000005.pt", "epoch-0000-batch-000010.pt",
                                   "epoch-0000-batch-000015.pt", "epoch-0001-batch-000005.pt",
                                   "epoch-0001-batch-000010.pt", "epoch-0001-batch-000015.pt",
                                   "epoch-0001.pt", "epoch-0002.pt"});
    for (const std::string from : {"epoch-0000-batch-000015.pt", "epoch-0001-batch-000005.pt"}) {
      INFO("resumed from " << from);
      const auto again = dir / (backend + "-from-" + from);
      auto resume = job(dir, options, again);
      resume.insert(resume.end(), {"--resume", (whole / "checkpoints" / from).string()});
      const auto resumed = run_dptrain(shell_words(resume));
      INFO(resumed.err);
      REQUIRE(resumed.status == 0);
      CHECK(max_relative_difference(load_parameters(again / "model.pt"),
                                    load_parameters(whole / "model.pt")) == 0);
      const auto epochs = metrics_of(again);
      REQUIRE(epochs.size() == 2);
      // Rank 0 carries a resumed epoch's sums on: the same terms, added in another order.
      CHECK(epochs[1].at("train_loss").get<double>() ==
            Approx(metrics_of(whole)[1].at("train_loss").get<double>()).epsilon(1e-12));
      CHECK(epochs[1].at("train_samples") == 600);
    }
  }
}

TEST_CASE("resuming a cosine run with more epochs says that the schedule now spans the longer run",
          "[cli][resume][optim]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  const std::vector<std::string> cosine = {
      "--set", "parallel.devices=cpu", "--set", "scheduler.name=cosine", "--set", "train.epochs=1"};
  const auto out = dir / "run";
  REQUIRE(run_dptrain(shell_words(job(dir, cosine, out))).status == 0);
  auto longer = job(dir, cosine, out);
  longer.insert(longer.end(), {"--set", "train.epochs=2", "--resume", "auto"});
  const auto r = run_dptrain(shell_words(longer));
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.err, ContainsSubstring("train.epochs was 1 and is now 2, and the cosine schedule "
                                      "spans the whole run: the learning rate follows the new "
                                      "length from here"));
}
