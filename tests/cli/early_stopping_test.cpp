// Early stopping as users run it, on every backend: a run whose watched figure plateaus stops at
// the epoch patience says, says why, and ends with the best epoch's weights.
#include "support/catch.h"

#include "core/fs.h"
#include "serialize/torch_file.h"
#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// On this data set the training loss stays near chance (2.3), so it never improves by min_delta
// 1.0: epoch 1 is the best, and with patience 2 the run stops after epoch 3 of 6. The weights do
// move from epoch to epoch, so restoring epoch 1's is visible.
std::string plateau_args(const TempDir& dir, int epochs) {
  return "train --set data.dir=" + (dir / "data").string() +
         " --set data.batch_size=60 --set model.init_std=0.1 --set optimizer.lr=0.1"
         " --set runtime.threads=1 --set parallel.timeout_s=60 --set train.epochs=" +
         std::to_string(epochs);
}

const std::string kWatchTrainLoss =
    " --set early_stopping.enabled=true --set early_stopping.monitor=train_loss"
    " --set early_stopping.min_delta=1 --set early_stopping.patience=2";

}  // namespace

TEST_CASE("a plateau stops the run at the patience's epoch and restores the best weights",
          "[cli][early_stopping][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 90);
  const auto one_epoch = dir / "one";
  REQUIRE(run_dptrain(plateau_args(dir, 1) + " --set parallel.devices=cpu --output " +
                      one_epoch.string())
              .status == 0);
  const auto three_epochs = dir / "three";
  REQUIRE(run_dptrain(plateau_args(dir, 3) + " --set parallel.devices=cpu --output " +
                      three_epochs.string())
              .status == 0);

  const std::vector<std::pair<std::string, std::string>> backends = {
      {"single", " --set parallel.devices=cpu"},
      {"dp", " --set parallel.backend=dp --set parallel.devices='[\"cpu\",\"cpu\"]'"},
      {"ddp", " --set parallel.backend=ddp --set parallel.devices='[\"cpu\",\"cpu\"]'"}};
  for (const auto& [name, backend] : backends) {
    INFO(name);
    const auto out = dir / ("stopped-" + name);
    const auto result =
        run_dptrain(plateau_args(dir, 6) + backend + kWatchTrainLoss + " --output " + out.string());
    INFO(result.err);
    REQUIRE(result.status == 0);
    CHECK_THAT(result.out, ContainsSubstring("early stopping: train_loss did not improve on ") &&
                               ContainsSubstring("(epoch 1) for 2 evaluations; stopped after epoch "
                                                 "3\nearly stopping: restored the weights of epoch "
                                                 "1 (best train_loss "));
    const auto summary = summary_of(out);
    CHECK(summary.at("stopped_early") == true);
    CHECK(summary.at("epochs_run") == 3);
    CHECK(summary.at("best_epoch") == 1);
    const auto first = summary_of(one_epoch);
    CHECK(summary.at("best_value") == Approx(first.at("train_loss").get<double>()).epsilon(1e-6));
    CHECK(summary.at("test_acc") == first.at("test_acc"));
    // Three epoch lines in metrics.jsonl, and the weights of the end of epoch 1: for dp and ddp
    // within float32 rounding of summing over chunks (their equivalence tests bound that).
    const std::string metrics = dptrain::core::read_text_file(out / "metrics.jsonl");
    CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 3);
    CHECK(max_relative_difference(load_parameters(out / "model.pt"),
                                  load_parameters(one_epoch / "model.pt")) <= 1e-4);
  }

  // Without restore_best the run ends with its last weights, those of epoch 3. With save_best,
  // best.pt is the checkpoint written after epoch 1, the best.
  const auto kept = dir / "kept";
  REQUIRE(run_dptrain(plateau_args(dir, 6) + " --set parallel.devices=cpu" + kWatchTrainLoss +
                      " --set early_stopping.restore_best=false --set checkpoint.save_best=true"
                      " --output " +
                      kept.string())
              .status == 0);
  const auto best = dptrain::serialize::decode_torch_file(
      dptrain::core::read_text_file(kept / "checkpoints" / "best.pt"));
  const std::string record = dptrain::serialize::at(*best, "record", "best.pt").text;
  CHECK(nlohmann::json::parse(record).at("epochs").size() == 1);
  CHECK(max_relative_difference(load_parameters(kept / "model.pt"),
                                load_parameters(three_epochs / "model.pt")) == 0);
  CHECK(summary_of(kept).at("best_epoch") == 1);
  // Epochs 1 and 3 ended far apart, so the restore checks above could fail.
  CHECK(max_relative_difference(load_parameters(three_epochs / "model.pt"),
                                load_parameters(one_epoch / "model.pt")) > 0.01);
}

TEST_CASE("a validation split holds out training samples and is reported per epoch",
          "[cli][early_stopping]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 90);
  const auto out = dir / "out";
  const auto result =
      run_dptrain(plateau_args(dir, 1) +
                  " --set parallel.devices=cpu --set data.val_split=0.1 --output " + out.string());
  REQUIRE(result.status == 0);
  CHECK_THAT(result.err,
             ContainsSubstring("data: 540 training samples, 60 held out for validation"));
  CHECK_THAT(result.out, ContainsSubstring("  val loss ") && ContainsSubstring("  val acc "));
  const auto record = nlohmann::json::parse(dptrain::core::read_text_file(out / "metrics.jsonl"));
  CHECK(record.at("train_samples") == 540);
  CHECK(record.contains("val_loss"));
  CHECK(record.contains("val_acc"));
}

TEST_CASE(
    "a run resumed with restore_best from a checkpoint that kept no best weights says so and ends "
    "with the last epoch's (it crashed reading weights that are not there)",
    "[cli][early_stopping]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 90);
  const auto out = dir / "run";
  const std::string cpu = " --set parallel.devices=cpu --output " + out.string();
  // Two epochs without restore_best: epoch 1 is the best (the plateau above), its weights unkept.
  const auto first = run_dptrain(plateau_args(dir, 2) + kWatchTrainLoss +
                                 " --set early_stopping.restore_best=false" + cpu);
  INFO(first.err);
  REQUIRE(first.status == 0);
  const auto resumed =
      run_dptrain(plateau_args(dir, 3) + kWatchTrainLoss +
                  " --set early_stopping.restore_best=true" + cpu + " --resume auto");
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.out, ContainsSubstring("early stopping: epoch 1 was the best, but its weights "
                                            "were not kept"));
  CHECK(summary_of(out).at("epochs_run") == 3);
  CHECK(summary_of(out).at("best_epoch") == 1);
}
