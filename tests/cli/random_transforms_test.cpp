// Random training transforms are drawn per sample from (seed, epoch, index), never from the thread
// or rank that reaches a sample first: through the real binary, a run with random crops and flips
// trains to the same parameters with loader workers as without, on dp and ddp, and
// resumes from a checkpoint in the middle of an epoch to the very parameters of the run that was
// not stopped. (The batches themselves, for 1 to 4 ranks: tests/data/random_batches_test.cpp.)
#include "support/catch.h"

#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// LeNet's augmentation in d2l's style: a 28x28 crop of the picture padded by 2, and a flip.
const std::string kAugment =
    R"(data.train_transforms=[{"name": "random_crop", "size": 28, "padding": 2},)"
    R"( {"name": "random_horizontal_flip"}])";

std::vector<std::string> augmented(std::vector<std::string> options) {
  options.insert(options.end(), {"--set", kAugment});
  return options;
}

std::vector<std::string> ddp_ranks(int ranks) {
  std::string devices = "[";
  for (int r = 0; r < ranks; ++r) devices += std::string(r ? "," : "") + "\"cpu\"";
  return {"--set", "parallel.backend=ddp", "--set", "parallel.devices=" + devices + "]"};
}

}  // namespace

TEST_CASE(
    "random crops and flips train to the very same parameters with and without loader workers, "
    "on dp and ddp",
    "[cli][transforms][slow]") {
  TempDir dir;
  write_real_subset(dir / "data", 600, 60);
  // Batches of 60, 2 epochs: the second epoch's draws are not the first's.
  const auto train = [&](const std::string& name, std::vector<std::string> options) {
    options.insert(options.end(), {"--set", "data.batch_size=60"});
    const auto out = dir / name;
    const ProcessResult result =
        run_dptrain(shell_words(momentum_sgd_job(dir / "data", options, out)));
    INFO(name << "\n" << result.err);
    REQUIRE(result.status == 0);
    return load_parameters(out / "model.pt");
  };
  // Each backend against itself: the same samples, batches and draws give the same arithmetic,
  // bit for bit. (Across backends the sums round otherwise, and a near tie in LeNet's max
  // pooling can then take another branch: tests/data/random_batches_test.cpp compares the
  // backends' batches themselves.)
  // (One device: tests/cli/folder_train_test.cpp.)
  const std::vector<std::pair<std::string, std::vector<std::string>>> backends = {
      {"dp", {"--set", "parallel.backend=dp", "--set", R"(parallel.devices=["cpu","cpu"])"}},
      {"ddp", ddp_ranks(2)}};
  for (const auto& [name, backend] : backends) {
    INFO(name);
    auto with_workers = augmented(backend);
    with_workers.insert(with_workers.end(),
                        {"--set", "data.num_workers=2", "--set", "data.prefetch_batches=3"});
    const auto alone = train(name + "-0", augmented(backend));
    const auto workers = train(name + "-2", with_workers);
    CHECK(max_relative_difference(workers, alone) == 0);
    // And the draws matter: without them the run ends elsewhere.
    CHECK(max_relative_difference(train(name + "-none", backend), alone) > 1e-3);
  }
}

TEST_CASE(
    "a run with random transforms and loader workers resumes from the middle of an epoch to the "
    "parameters of the run that was not stopped",
    "[cli][transforms][resume][slow]") {
  TempDir dir;
  write_real_subset(dir / "data", 600, 60);
  // 20 batches of 30 an epoch; a checkpoint every 5 steps.
  for (const std::string backend : {"single", "ddp"}) {
    INFO(backend);
    std::vector<std::string> options = augmented(on_cpu_backend(backend));
    options.insert(options.end(),
                   {"--set", "checkpoint.every_steps=5", "--set", "checkpoint.every_epochs=0",
                    "--set", "checkpoint.keep_last=0", "--set", "data.num_workers=2"});
    const auto whole = dir / (backend + "-whole");
    const ProcessResult uninterrupted =
        run_dptrain(shell_words(momentum_sgd_job(dir / "data", options, whole)));
    INFO(uninterrupted.err);
    REQUIRE(uninterrupted.status == 0);
    // Into the second epoch, whose draws are epoch 1's.
    const auto again = dir / (backend + "-resumed");
    auto resume = momentum_sgd_job(dir / "data", options, again);
    resume.insert(resume.end(),
                  {"--resume", (whole / "checkpoints" / "epoch-0001-batch-000005.pt").string()});
    const ProcessResult resumed = run_dptrain(shell_words(resume));
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    CHECK(max_relative_difference(load_parameters(again / "model.pt"),
                                  load_parameters(whole / "model.pt")) == 0);
  }
}
