// A GPU run's files on a machine without one, and a GPU run resumed on the GPU. Loaded tensors
// land on the devices of the model and optimizer that take them (each rank's own), never on the
// device the file names: a checkpoint from cuda:1 resumes, evaluates and predicts on the CPU.
#include "support/catch.h"
#include "support/skip.h"

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/runs.h"
#include "support/torch_archives.h"

using namespace dptrain::testing;

namespace {

// 600 images in batches of 30 (20 steps an epoch), two epochs, momentum to carry, a checkpoint
// every 5 steps.
std::vector<std::string> job(const TempDir& dir, const std::string& device,
                             const std::filesystem::path& out) {
  return momentum_sgd_job(dir / "data",
                          {"--set", "parallel.devices=" + device, "--set",
                           "checkpoint.every_steps=5", "--set", "checkpoint.keep_last=0"},
                          out);
}

std::filesystem::path train_on(const TempDir& dir, const std::string& device,
                               const std::string& name) {
  const auto out = dir / name;
  const auto r = run_dptrain(shell_words(job(dir, device, out)));
  INFO(r.err);
  REQUIRE(r.status == 0);
  return out;
}

// Resumes `checkpoint` on `device` into dir/name; the run's folder.
std::filesystem::path resume(const TempDir& dir, const std::string& device,
                             const std::filesystem::path& checkpoint, const std::string& name) {
  const auto out = dir / name;
  auto args = job(dir, device, out);
  args.insert(args.end(), {"--resume", checkpoint.string()});
  const auto r = run_dptrain(shell_words(args));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, ContainsSubstring("resumed from " + checkpoint.string()));
  return out;
}

int64_t evaluated_correct(const TempDir& dir, const std::filesystem::path& model,
                          const std::filesystem::path& run) {
  const auto report = dir / "report.json";
  const auto r = run_dptrain("evaluate --model " + model.string() + " --config " +
                             (run / "config.json").string() + " --set parallel.devices=cpu" +
                             " --output " + report.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(dptrain::core::read_text_file(report)).at("correct");
}

std::string predicted(const TempDir& dir, const std::filesystem::path& model) {
  const auto r = run_dptrain("predict --json --top 3 --model " + model.string() + " " +
                             (dir / "data" / "t10k-images-idx3-ubyte.gz").string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

constexpr const char* kMidEpoch = "epoch-0001-batch-000005.pt";

}  // namespace

TEST_CASE(
    "a checkpoint and model.pt whose storages say cuda:1 resume, evaluate and predict on "
    "the CPU",
    "[cli][resume][model]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto whole = train_on(dir, "cpu", "whole");
  // As a GPU run on cuda:1 would have written them.
  REQUIRE(relocate_storages(whole / "checkpoints" / kMidEpoch, dir / "gpu.pt", "cuda:1") > 10);
  REQUIRE(relocate_storages(whole / "model.pt", dir / "gpu-model.pt", "cuda:1") == 8);

  // Parameters and momentum both came back (without the momentum the steps would differ).
  const auto resumed = resume(dir, "cpu", dir / "gpu.pt", "resumed");
  CHECK(max_relative_difference(load_parameters(resumed / "model.pt"),
                                load_parameters(whole / "model.pt")) == 0);

  const int64_t counted = summary_of(whole).at("test_correct");
  CHECK(evaluated_correct(dir, dir / "gpu-model.pt", whole) == counted);
  CHECK(evaluated_correct(dir, dir / "gpu.pt", whole) ==
        evaluated_correct(dir, whole / "checkpoints" / kMidEpoch, whole));
  CHECK(predicted(dir, dir / "gpu-model.pt") == predicted(dir, whole / "model.pt"));

  // --init-from: a learning rate of 1e-30 leaves the weights as they came.
  auto args = job(dir, "cpu", dir / "init");
  args.insert(args.end(), {"--set", "optimizer.lr=1e-30", "--set", "train.epochs=1", "--set",
                           "optimizer.momentum=0", "--init-from", (dir / "gpu-model.pt").string()});
  const auto init = run_dptrain(shell_words(args));
  INFO(init.err);
  REQUIRE(init.status == 0);
  CHECK(summary_of(dir / "init").at("test_correct") == counted);
}

TEST_CASE(
    "a run on cuda:0 resumes on the GPU to the uninterrupted run's parameters, and its "
    "checkpoint resumes and evaluates on the CPU",
    "[cli][resume][cuda]") {
  SKIP_WITHOUT_CUDA();
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto whole = train_on(dir, "cuda:0", "whole");
  const auto checkpoint = whole / "checkpoints" / kMidEpoch;
  const auto on_gpu = resume(dir, "cuda:0", checkpoint, "on-gpu");
  // The same kernels on the same shapes, but cuDNN's default weight-gradient algorithms may sum
  // in another order from run to run: ddp_test's bound.
  CHECK(max_relative_difference(load_parameters(on_gpu / "model.pt"),
                                load_parameters(whole / "model.pt")) <= 1e-4);
  // The CPU's kernels round differently: 25 steps from the same state stay close.
  const auto on_cpu = resume(dir, "cpu", checkpoint, "on-cpu");
  CHECK(max_relative_difference(load_parameters(on_cpu / "model.pt"),
                                load_parameters(whole / "model.pt")) <= 1e-3);
  const int64_t counted = summary_of(whole).at("test_correct");
  CHECK(std::abs(evaluated_correct(dir, whole / "model.pt", whole) - counted) <= 1);
}
