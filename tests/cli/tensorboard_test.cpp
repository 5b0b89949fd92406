// The run's TensorBoard event file, read by an independent reader (tests/python/
// read_tensorboard.py: Google's protobuf parser and python3-crc32c): every record's CRCs, the
// epoch figures against metrics.jsonl, the step figures at every log.every_steps, the config as
// text; a resumed run that never repeats a step; metrics.csv; log.tensorboard false.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

// 600 images in batches of 30: 20 steps an epoch, 2 epochs, a step record every 3 steps.
std::vector<std::string> job(const TempDir& dir, const std::filesystem::path& out) {
  return {"train",
          "--set",
          "data.dir=" + (dir / "data").string(),
          "--set",
          "data.batch_size=30",
          "--set",
          "train.epochs=2",
          "--set",
          "parallel.devices=cpu",
          "--set",
          "runtime.threads=1",
          "--set",
          "log.every_steps=3",
          "--set",
          "checkpoint.every_steps=5",
          "--set",
          "checkpoint.keep_last=0",
          "--output",
          out.string()};
}

std::vector<int64_t> steps_of(const nlohmann::json& points) {
  std::vector<int64_t> steps;
  for (const auto& p : points) steps.push_back(p[0].get<int64_t>());
  return steps;
}

// Each epoch's figures in the event file are metrics.jsonl's, as floats, at its last step.
void check_epochs_match_metrics(const nlohmann::json& events, const std::filesystem::path& run) {
  const auto epochs = metrics_of(run);
  const auto& scalars = events.at("scalars");
  for (const std::string figure : {"train_loss", "train_acc", "test_loss", "test_acc"}) {
    const auto& points = scalars.at("epoch/" + figure);
    REQUIRE(points.size() == epochs.size());
    for (size_t e = 0; e < epochs.size(); ++e) {
      INFO(figure << " epoch " << e + 1);
      CHECK(points[e][0] == epochs[e].at("global_step"));
      CHECK(points[e][1].get<double>() ==
            static_cast<double>(static_cast<float>(epochs[e].at(figure).get<double>())));
    }
  }
  const auto& speed = scalars.at("speed/samples_per_sec");
  for (size_t e = 0; e < epochs.size(); ++e) {
    CHECK(speed[e][1].get<double>() ==
          static_cast<double>(static_cast<float>(epochs[e].at("samples_per_sec").get<double>())));
    CHECK(scalars.at("memory/optimizer_state_bytes/rank0")[e][1].get<double>() ==
          epochs[e].at("optimizer_state_bytes")[0].get<double>());
  }
}

ino_t inode_of(const std::filesystem::path& file) {
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  return st.st_ino;
}

const std::vector<int64_t> kEveryThirdStep = {3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39};

}  // namespace

TEST_CASE("the event file holds every step and epoch record once, each CRC intact", "[cli][tb]") {
  if (!python_event_reader_present()) {
    DPTRAIN_SKIP("needs Debian's python3-protobuf and python3-crc32c (scripts/setup.sh)");
  }
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto run = dir / "run";
  const auto trained = run_dptrain(shell_words(job(dir, run)));
  INFO(trained.err);
  REQUIRE(trained.status == 0);
  const auto events = read_events(run);
  CHECK(events.at("file_version") == "brain.Event:2");
  const auto& scalars = events.at("scalars");
  CHECK(steps_of(scalars.at("step/train_loss")) == kEveryThirdStep);
  for (const auto& p : scalars.at("step/lr")) CHECK(p[1].get<double>() == Approx(0.2f));
  CHECK(steps_of(scalars.at("epoch/test_acc")) == std::vector<int64_t>{20, 40});
  CHECK_FALSE(scalars.contains("epoch/val_acc"));
  check_epochs_match_metrics(events, run);
  const auto& config = events.at("texts").at("config");
  REQUIRE(config.size() == 1);
  CHECK(config[0][1].get<std::string>().find("\"batch_size\": 30") != std::string::npos);

  // metrics.csv: Lightning's CSVLogger shape, a row per epoch holding metrics.jsonl's figures.
  const std::string csv = dptrain::core::read_text_file(run / "metrics.csv");
  CHECK(csv.rfind("epoch,step,lr,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc,", 0) ==
        0);
  const auto epochs = metrics_of(run);
  const std::string second_row = csv.substr(csv.rfind('\n', csv.size() - 2) + 1);
  CHECK(second_row.rfind("2,40,0.2," + epochs[1].at("train_loss").dump() + "," +
                             epochs[1].at("train_acc").dump() + ",,,",
                         0) == 0);
}

TEST_CASE("a run resumed from a checkpoint cuts its event file there and never repeats a step",
          "[cli][tb][resume]") {
  if (!python_event_reader_present()) {
    DPTRAIN_SKIP("needs Debian's python3-protobuf and python3-crc32c (scripts/setup.sh)");
  }
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto run = dir / "run";
  REQUIRE(run_dptrain(shell_words(job(dir, run))).status == 0);
  // A crash after step 25's checkpoint, mid-write: the later checkpoints and results never
  // happened, and the file ends in half a record.
  for (const std::string gone :
       {"epoch-0001-batch-000010.pt", "epoch-0001-batch-000015.pt", "epoch-0002.pt"}) {
    std::filesystem::remove(run / "checkpoints" / gone);
  }
  std::filesystem::remove(run / "summary.json");
  {
    std::ofstream torn(the_event_file(run), std::ios::app | std::ios::binary);
    torn << std::string("\x40\0\0\0\0\0\0\0\x01\x02", 10);
  }
  auto resume = job(dir, run);
  resume.insert(resume.end(), {"--resume", "auto"});
  const double resumed_at =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto resumed = run_dptrain(shell_words(resume));
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.err, ContainsSubstring("dropped 10 bytes after the last whole record"));
  const auto events = read_events(run);
  CHECK(steps_of(events.at("scalars").at("step/train_loss")) == kEveryThirdStep);
  CHECK(steps_of(events.at("scalars").at("epoch/test_acc")) == std::vector<int64_t>{20, 40});
  CHECK(events.at("texts").at("config").size() == 1);
  check_epochs_match_metrics(events, run);
  // Step 24 (at or before the checkpoint) is the first part's record; step 27, past it, the
  // resumed part's.
  const auto& losses = events.at("scalars").at("step/train_loss");
  CHECK(losses[7][2].get<double>() < resumed_at);
  CHECK(losses[8][2].get<double>() >= resumed_at);
}

TEST_CASE("a run resumed at its file's last step appends to the same file", "[cli][tb][resume]") {
  if (!python_event_reader_present()) {
    DPTRAIN_SKIP("needs Debian's python3-protobuf and python3-crc32c (scripts/setup.sh)");
  }
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto run = dir / "run";
  auto first = job(dir, run);
  first.insert(first.end(), {"--set", "train.epochs=1"});
  REQUIRE(run_dptrain(shell_words(first)).status == 0);
  const auto file = the_event_file(run);
  const ino_t inode = inode_of(file);
  // One more epoch from the checkpoint at step 20, the file's last step: nothing to cut.
  auto more = job(dir, run);
  more.insert(more.end(), {"--resume", "auto"});
  const auto resumed = run_dptrain(shell_words(more));
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK(the_event_file(run) == file);
  CHECK(inode_of(file) == inode);  // a running TensorBoard goes on reading it
  const auto events = read_events(run);
  CHECK(steps_of(events.at("scalars").at("step/train_loss")) == kEveryThirdStep);
  CHECK(steps_of(events.at("scalars").at("epoch/test_acc")) == std::vector<int64_t>{20, 40});
}

TEST_CASE("log.tensorboard false writes no event file", "[cli][tb]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 60, 30);
  auto args = job(dir, dir / "run");
  args.insert(args.end(), {"--set", "log.tensorboard=false", "--set", "train.epochs=1"});
  const auto trained = run_dptrain(shell_words(args));
  INFO(trained.err);
  REQUIRE(trained.status == 0);
  for (const auto& e : std::filesystem::directory_iterator(dir / "run")) {
    CHECK(e.path().filename().string().rfind("events.out.tfevents.", 0) == std::string::npos);
  }
  CHECK(std::filesystem::exists(dir / "run" / "metrics.csv"));
}
