// What TensorBoard itself shows of a run: the event files of a fresh run, a run resumed after a
// crash, a preempted and requeued run and a ddp run, read by TensorBoard's own code (PyPI's
// tensorboard in the project's venv, scripts/venv.sh) through all three of its readers: the Rust
// data server `tensorboard --logdir` reads through by default, the Python data provider it falls
// back to, and the classic EventAccumulator. Every scalar
// must be the file's (as tests/python/read_tensorboard.py decodes it), every epoch figure
// metrics.jsonl's, and no tag may show a step twice. Without TensorBoard in the venv these
// tests skip, saying so; CI sets DPTRAIN_REQUIRE_VENV=1, where they fail instead.
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "support/catch.h"
#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

bool venv_required() {
  const char* required = std::getenv("DPTRAIN_REQUIRE_VENV");
  return required != nullptr && std::string(required) == "1";
}

#define SKIP_WITHOUT_TENSORBOARD()                                 \
  do {                                                             \
    if (tensorboard_python().empty()) {                            \
      const char* why =                                            \
          "TensorBoard is not importable from the project's venv " \
          "(scripts/venv.sh installs it where PyPI answers)";      \
      if (venv_required()) FAIL(why);                              \
      DPTRAIN_SKIP(why);                                           \
    }                                                              \
  } while (false)

// 600 images, 10% held out for validation, in batches of 30: 18 steps an epoch, 2 epochs, a step
// record every 2 steps, a checkpoint every 5.
std::vector<std::string> reader_job(const TempDir& dir, const std::filesystem::path& out,
                                    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"train"};
  for (const std::string& set :
       {"data.dir=" + (dir / "data").string(), std::string("data.batch_size=30"),
        std::string("train.epochs=2"), std::string("runtime.threads=1"),
        std::string("log.every_steps=2"), std::string("checkpoint.every_steps=5"),
        std::string("data.val_split=0.1")}) {
    args.insert(args.end(), {"--set", set});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--output", out.string()});
  return args;
}

void train_ok(const std::vector<std::string>& args) {
  const auto trained = run_dptrain(shell_words(args));
  INFO(shell_words(args) << "\n" << trained.err);
  REQUIRE(trained.status == 0);
}

// [[step, value], ...] of `file_points` ([[step, value, wall_time], ...]).
nlohmann::json steps_and_values(const nlohmann::json& file_points) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : file_points) points.push_back({p[0], p[1]});
  return points;
}

// Each of TensorBoard's readers shows exactly the file's scalars, whose steps only grow, and each
// epoch figure is metrics.jsonl's at the epoch's last step; its text plugin shows the file's
// config text.
void check_tensorboard_shows_the_run(const std::filesystem::path& run) {
  const nlohmann::json shown = read_with_tensorboard(run);
  const nlohmann::json events = read_events(run);
  const nlohmann::json& file = events.at("scalars");
  // The config text once, at step 0, as the text plugin shows it: the file's own.
  REQUIRE(events.at("texts").at("config").size() == 1);
  CHECK(shown.at("texts") == events.at("texts"));
  INFO("TensorBoard " << shown.at("version").get<std::string>());
  // Version 2: the Python readers purge nothing, so a step written twice would show twice there.
  CHECK(shown.at("file_version") == 2.0);
  REQUIRE(file.contains("step/train_loss"));
  const auto epochs = metrics_of(run);
  REQUIRE(epochs.size() == 2);
  for (const std::string reader : {"data_server", "provider", "accumulator"}) {
    INFO(reader);
    const nlohmann::json& scalars = shown.at(reader);
    CHECK(scalars.size() == file.size());
    for (const auto& [tag, points] : file.items()) {
      INFO(tag);
      REQUIRE(scalars.contains(tag));
      CHECK(scalars.at(tag) == steps_and_values(points));
      for (size_t i = 1; i < points.size(); ++i) CHECK(points[i][0] > points[i - 1][0]);
    }
    for (const std::string figure :
         {"train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc"}) {
      INFO(figure);
      const nlohmann::json& points = scalars.at("epoch/" + figure);
      REQUIRE(points.size() == epochs.size());
      for (size_t e = 0; e < epochs.size(); ++e) {
        CHECK(points[e][0] == epochs[e].at("global_step"));
        CHECK(points[e][1].get<double>() ==
              static_cast<double>(static_cast<float>(epochs[e].at(figure).get<double>())));
      }
    }
  }
}

}  // namespace

TEST_CASE("TensorBoard shows a fresh run's every scalar as the file and metrics.jsonl hold it",
          "[cli][tb][peers]") {
  SKIP_WITHOUT_TENSORBOARD();
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  train_ok(reader_job(dir, dir / "run"));
  check_tensorboard_shows_the_run(dir / "run");
}

TEST_CASE("TensorBoard shows a run resumed after a crash without the steps it redid twice",
          "[cli][tb][peers][resume]") {
  SKIP_WITHOUT_TENSORBOARD();
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto run = dir / "run";
  train_ok(reader_job(dir, run, {"--set", "checkpoint.keep_last=0"}));
  // A crash after step 25's checkpoint (18 steps an epoch: 540 images once 10% are held out):
  // what came later never happened, but its records stay in the event file until the resume
  // cuts them.
  for (const std::string gone :
       {"epoch-0001-batch-000012.pt", "epoch-0001-batch-000017.pt", "epoch-0002.pt"}) {
    REQUIRE(std::filesystem::remove(run / "checkpoints" / gone));
  }
  std::filesystem::remove(run / "summary.json");
  train_ok(reader_job(dir, run, {"--set", "checkpoint.keep_last=0", "--resume", "auto"}));
  check_tensorboard_shows_the_run(run);
}

TEST_CASE("TensorBoard shows a preempted and requeued run as one", "[cli][tb][peers][resume]") {
  SKIP_WITHOUT_TENSORBOARD();
  TempDir dir;
  // 90 steps an epoch: the notice comes with 175 steps still to go.
  write_tiny_dataset(dir / "data", 3000, 60);
  const auto run = dir / "run";
  BackgroundRun first(reader_job(dir, run, {"--set", "log.every_steps=1"}));
  REQUIRE(first.wait_for_stderr("epoch 1 batch 5/", 120));
  first.signal(SIGUSR1);
  const auto stopped = first.finish(120);
  INFO(stopped.err);
  REQUIRE(stopped.status == 75);
  train_ok(reader_job(dir, run, {"--set", "log.every_steps=1", "--resume", "auto"}));
  check_tensorboard_shows_the_run(run);
}

TEST_CASE("TensorBoard shows a ddp run's scalars as rank 0 wrote them", "[cli][tb][peers][ddp]") {
  SKIP_WITHOUT_TENSORBOARD();
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  train_ok(
      reader_job(dir, dir / "run",
                 {"--set", "parallel.backend=ddp", "--set", "parallel.devices=[\"cpu\",\"cpu\"]"}));
  check_tensorboard_shows_the_run(dir / "run");
}
