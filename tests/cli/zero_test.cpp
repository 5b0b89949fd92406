// ZeRO through the real binary: a run stopped mid-epoch under stage 2 on 2 ranks leaves a
// checkpoint in ddp's layout, which resumes under stage 0 on 3 ranks and on one device exactly as
// a stage-0 checkpoint of the same step does (so the optimizer's state carried over whole); a
// stage-0 checkpoint resumes under stage 2 likewise; metrics.jsonl gives each rank's bytes.
#include "support/catch.h"

#include <csignal>

#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// 3000 images in batches of 60 (which 2 and 3 ranks split): 50 Adam steps.
std::vector<std::string> job(const TempDir& dir, const std::filesystem::path& out,
                             const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"train",
                                   "--set",
                                   "data.dir=" + (dir / "data").string(),
                                   "--set",
                                   "data.batch_size=60",
                                   "--set",
                                   "train.epochs=1",
                                   "--set",
                                   "model.init_std=0.1",
                                   "--set",
                                   "optimizer.name=adam",
                                   "--set",
                                   "optimizer.momentum=0",
                                   "--set",
                                   "optimizer.lr=0.002",
                                   "--set",
                                   "runtime.threads=1",
                                   "--set",
                                   "parallel.timeout_s=60",
                                   "--output",
                                   out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> ddp(int ranks, int stage) {
  std::string devices = "[\"cpu\"";
  for (int r = 1; r < ranks; ++r) devices += ",\"cpu\"";
  return {"--set", "parallel.backend=ddp",
          "--set", "parallel.devices=" + devices + "]",
          "--set", "parallel.zero_stage=" + std::to_string(stage)};
}

std::filesystem::path only_step_checkpoint(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().find("-batch-") != std::string::npos) found.push_back(e);
  }
  REQUIRE(found.size() == 1);
  return found[0];
}

// Resumes `checkpoint` in a fresh folder with `placement`; the final parameters.
std::vector<torch::Tensor> resume(const TempDir& dir, const std::string& name,
                                  const std::filesystem::path& checkpoint,
                                  std::vector<std::string> placement) {
  placement.insert(placement.end(), {"--resume", checkpoint.string()});
  const auto run = run_dptrain(shell_words(job(dir, dir / name, placement)));
  INFO(name << ": " << run.err);
  REQUIRE(run.status == 0);
  return load_parameters(dir / name / "model.pt");
}

}  // namespace

TEST_CASE("a stage-2 checkpoint of 2 ranks resumes under stage 0 on 3 ranks and on one device",
          "[cli][zero][resume][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);

  // Stage 2 on 2 ranks, stopped mid-epoch by a preemption notice. Sent as the ranks start (the
  // launcher holds it until they can act on it), it is acted on at their first vote, step 16:
  // sent later, it could land after the last vote and let the run finish.
  BackgroundRun run(job(dir, dir / "stage2", ddp(2, 2)));
  REQUIRE(run.wait_for_stderr("ddp: rank 1 started", 60));
  run.signal(SIGTERM);
  const auto stopped = run.finish(60);
  INFO(stopped.err);
  REQUIRE(stopped.status == 75);
  const std::filesystem::path cut = only_step_checkpoint(dir / "stage2" / "checkpoints");

  // Stage 0 on 2 ranks, a checkpoint after every step: one of them is the same step's.
  std::vector<std::string> stage0 = ddp(2, 0);
  stage0.insert(stage0.end(),
                {"--set", "checkpoint.every_steps=1", "--set", "checkpoint.keep_last=0"});
  const auto whole = run_dptrain(shell_words(job(dir, dir / "stage0", stage0)));
  INFO(whole.err);
  REQUIRE(whole.status == 0);
  const std::filesystem::path same_step = dir / "stage0" / "checkpoints" / cut.filename();
  REQUIRE(std::filesystem::exists(same_step));

  const auto expected = resume(dir, "from-stage0-on-3", same_step, ddp(3, 0));
  // The resumed run moved the parameters on from the checkpoint's.
  CHECK(max_relative_difference(expected, load_parameters(dir / "stage0" / "model.pt")) > 0);
  CHECK(max_relative_difference(resume(dir, "from-stage2-on-3", cut, ddp(3, 0)), expected) == 0);
  CHECK(max_relative_difference(resume(dir, "stage2-from-stage0-on-3", same_step, ddp(3, 2)),
                                expected) == 0);
  const std::vector<std::string> single = {"--set", "parallel.devices=cpu"};
  CHECK(max_relative_difference(resume(dir, "from-stage2-single", cut, single),
                                resume(dir, "from-stage0-single", same_step, single)) == 0);
}

TEST_CASE(
    "a resumed run takes the optimizer's options from its config under stage 0 and ZeRO alike",
    "[cli][zero][resume]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 90);
  std::vector<std::string> stage0 = ddp(2, 0);
  stage0.insert(stage0.end(),
                {"--set", "checkpoint.every_steps=20", "--set", "checkpoint.keep_last=0"});
  const auto whole = run_dptrain(shell_words(job(dir, dir / "whole", stage0)));
  INFO(whole.err);
  REQUIRE(whole.status == 0);
  const auto checkpoint = dir / "whole" / "checkpoints" / "epoch-0000-batch-000020.pt";
  REQUIRE(std::filesystem::exists(checkpoint));
  // Other betas and weight decay than the checkpoint's run had. The rule (optim/optimizer_state.h):
  // a resumed optimizer takes the config's options, stage 0 and ZeRO's shards alike. Before the
  // checkpoint format became a torch.save dict, stage 0 took the checkpoint's and ZeRO the
  // config's; this guards the one rule.
  const std::vector<std::string> changed = {"--set", "optimizer.betas=[0.8,0.99]", "--set",
                                            "optimizer.weight_decay=0.01"};
  std::vector<std::string> zero0 = ddp(2, 0), zero1 = ddp(2, 1);
  zero0.insert(zero0.end(), changed.begin(), changed.end());
  zero1.insert(zero1.end(), changed.begin(), changed.end());
  const auto stage0_changed = resume(dir, "stage0-changed", checkpoint, zero0);
  CHECK(max_relative_difference(resume(dir, "stage1-changed", checkpoint, zero1), stage0_changed) ==
        0);
  CHECK(max_relative_difference(resume(dir, "stage0-same", checkpoint, ddp(2, 0)),
                                stage0_changed) > 0);  // the options did change the steps
}

TEST_CASE("metrics.jsonl gives each ZeRO rank's optimizer-state and gradient bytes",
          "[cli][zero][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 30);
  // d2l's LeNet: 129,068 parameters; laid out on 64-byte boundaries, 129,108 elements (40 of
  // gaps), so 43,036 per rank on 3 ranks.
  constexpr int64_t kParams = 129068;
  constexpr int64_t kLaidOut = 129108;
  constexpr int64_t kShard = 43036;
  for (const int stage : {0, 1, 2}) {
    INFO("stage " << stage);
    const auto out = dir / ("stage" + std::to_string(stage));
    const auto run = run_dptrain(shell_words(job(dir, out, ddp(3, stage))));
    INFO(run.err);
    REQUIRE(run.status == 0);
    const auto m = metrics_of(out).at(0);
    // Adam: two moments of 4 bytes per element.
    const int64_t state = stage == 0 ? 2 * kParams * 4 : 2 * kShard * 4;
    CHECK(m.at("optimizer_state_bytes") == std::vector<int64_t>(3, state));
    // Stage 0: the buckets, of which every .grad is a view; stage 1 adds its shard; stage 2 keeps
    // the shard alone.
    const int64_t grads = stage == 0   ? kLaidOut * 4
                          : stage == 1 ? kLaidOut * 4 + kShard * 4
                                       : kShard * 4;
    CHECK(m.at("gradient_bytes") == std::vector<int64_t>(3, grads));
  }
}

TEST_CASE("zero_stage outside ddp or above 2 is a config error naming the key", "[cli][zero]") {
  const auto single = run_dptrain("train --set parallel.zero_stage=1");
  CHECK(single.status == 3);
  CHECK_THAT(single.err,
             ContainsSubstring("parallel.zero_stage: shards over the ranks of the ddp backend, "
                               "not \"single\"") &&
                 ContainsSubstring("use parallel.backend \"ddp\", or zero_stage 0"));
  const auto three = run_dptrain("train --set parallel.backend=ddp --set parallel.zero_stage=3");
  CHECK(three.status == 3);
  CHECK_THAT(three.err, ContainsSubstring("parallel.zero_stage: must be at most 2, got 3"));
}
