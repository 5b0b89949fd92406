// Mixed precision and gradient clipping as users run them on a CPU: bf16 autocast changes the
// arithmetic but not the outcome by much, on single and dp; fp16 is refused on a CPU; clipping
// bounds the step.
#include <iostream>
#include "support/catch.h"

#include "core/fs.h"

#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

std::string tiny_run(const TempDir& dir, const std::string& extra, const std::string& out) {
  return "train --set data.dir=" + (dir / "data").string() +
         " --set data.batch_size=60 --set train.epochs=1 --set model.init_std=0.1"
         " --set optimizer.lr=0.1 --set runtime.threads=1 --set parallel.devices=cpu " +
         extra + " --output " + (dir / out).string();
}

double global_norm(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += (a[i] - b[i]).pow(2).sum().item<double>();
  return std::sqrt(sum);
}

// |a - b| / |b| over all parameters at once: bf16's rounding is relative to the big weights, so
// per tensor (a bias near zero) it would look far larger than it is.
double relative_distance(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double diff = 0;
  double size = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]).pow(2).sum().item<double>();
    size += b[i].pow(2).sum().item<double>();
  }
  return std::sqrt(diff / size);
}

}  // namespace

TEST_CASE("bf16 autocast computes in bfloat16 and stays close to fp32, on every backend",
          "[cli][amp]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 90);
  REQUIRE(run_dptrain(tiny_run(dir, "", "fp32")).status == 0);
  const auto bf16 = run_dptrain(tiny_run(dir, "--set precision=bf16", "bf16"));
  INFO(bf16.err);
  REQUIRE(bf16.status == 0);
  // dp and ddp over two CPUs: autocast reaches dp's replica threads and ddp's ranks.
  for (const std::string backend : {"dp", "ddp"}) {
    const auto run = run_dptrain(tiny_run(dir,
                                          "--set precision=bf16 --set parallel.backend=" + backend +
                                              " --set parallel.devices='[\"cpu\",\"cpu\"]'",
                                          "bf16-" + backend));
    INFO(run.err);
    REQUIRE(run.status == 0);
  }
  const auto fp32_params = load_parameters(dir / "fp32" / "model.pt");
  const auto bf16_params = load_parameters(dir / "bf16" / "model.pt");
  // bfloat16 keeps 8 bits of mantissa: visibly different arithmetic, the same training.
  const double apart = relative_distance(bf16_params, fp32_params);
  INFO("bf16 against fp32: " << apart);
  CHECK(apart > 1e-5);
  CHECK(apart < 0.01);
  for (const char* other : {"bf16-dp", "bf16-ddp"}) {
    INFO(other);
    CHECK(relative_distance(load_parameters(dir / other / "model.pt"), bf16_params) < 0.01);
  }
  CHECK(summary_of(dir / "bf16").at("precision") == "bf16");
}

TEST_CASE("fp16 with loss scaling and bf16 on cuda:0 stay close to fp32", "[cli][amp][cuda]") {
  SKIP_WITHOUT_CUDA();
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 90);
  const std::string gpu = "--set parallel.devices=cuda:0 ";
  REQUIRE(run_dptrain(tiny_run(dir, gpu, "fp32")).status == 0);
  const auto fp32 = load_parameters(dir / "fp32" / "model.pt");
  for (const std::string precision : {"fp16", "bf16"}) {
    INFO(precision);
    const auto result = run_dptrain(tiny_run(dir, gpu + "--set precision=" + precision, precision));
    INFO(result.err);
    REQUIRE(result.status == 0);
    CHECK(relative_distance(load_parameters(dir / precision / "model.pt"), fp32) < 0.01);
  }
  const auto record =
      nlohmann::json::parse(dptrain::core::read_text_file(dir / "fp16" / "metrics.jsonl"));
  CHECK(record.at("loss_scale").get<double>() >= 1.0);
  CHECK(record.at("skipped_steps").get<int64_t>() < record.at("global_step").get<int64_t>());
}

TEST_CASE("fp16 on a CPU is a config error with a hint", "[cli][amp]") {
  TempDir dir;
  const auto result = run_dptrain(
      "train --set precision=fp16 --set parallel.devices=cpu --output " + (dir / "out").string());
  CHECK(result.status == 3);
  CHECK_THAT(result.err,
             ContainsSubstring("precision: \"fp16\" needs GPUs, but this run trains on cpu") &&
                 ContainsSubstring("use \"bf16\" on a CPU"));
}

TEST_CASE("grad_clip_norm bounds the step's length", "[cli][amp]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 90);
  // One step of plain SGD at lr 1: the parameters move by the clipped gradient itself. The run at
  // lr 1e-30 ends where the weights started (float32 cannot hold so small a change).
  const std::string one_step = "--set train.limit_train_batches=1 --set optimizer.lr=";
  REQUIRE(run_dptrain(tiny_run(dir, one_step + "1e-30", "start")).status == 0);
  REQUIRE(run_dptrain(tiny_run(dir, one_step + "1 --set optimizer.grad_clip_norm=0.01", "clipped"))
              .status == 0);
  REQUIRE(run_dptrain(tiny_run(dir, one_step + "1", "free")).status == 0);
  const auto start = load_parameters(dir / "start" / "model.pt");
  CHECK(global_norm(load_parameters(dir / "clipped" / "model.pt"), start) ==
        Approx(0.01).epsilon(1e-3));
  CHECK(global_norm(load_parameters(dir / "free" / "model.pt"), start) > 0.02);
}
