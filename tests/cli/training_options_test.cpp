// Lightning's training options through the built binary: train.max_steps with accumulation, and
// the live progress line, which a terminal shows and a pipe never gets.
#include "support/catch.h"

#include <sstream>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// 600 images in batches of 30: 20 batches an epoch.
struct SmallRun {
  TempDir dir;
  SmallRun() { write_tiny_dataset(dir / "data", 600, 60); }
  std::string args(const std::filesystem::path& out) const {
    return "train --set data.dir=" + (dir / "data").string() +
           " --set data.batch_size=30 --set train.epochs=2 --set parallel.devices=cpu"
           " --set runtime.threads=1 --output " +
           out.string();
  }
};

// The lines of a terminal's output: a terminal ends lines with \r\n, and a redrawn line is
// what follows its last \r.
std::vector<std::string> screen_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto cr = line.rfind('\r');
    if (cr != std::string::npos) line = line.substr(cr + 1);
    if (line.rfind("\x1b[2K", 0) == 0) line = line.substr(4);
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// "test acc: 0.84, 4.10 sec/epoch on [cpu]" without its timing, which differs between runs.
std::string without_timing(const std::string& line) {
  const auto comma = line.find(',');
  const auto unit = line.find(" sec/epoch");
  if (comma == std::string::npos || unit == std::string::npos) return line;
  return line.substr(0, comma) + line.substr(unit);
}

}  // namespace

TEST_CASE("train.max_steps ends the run after that many optimizer steps, mid-epoch",
          "[cli][optim]") {
  SmallRun run;
  const auto out = run.dir / "run";
  // 20 batches an epoch, 3 per step: 7 steps an epoch (the last of 2 batches); 9 steps end the
  // run 2 steps into the second of 3 epochs.
  const auto result = run_dptrain(run.args(out) +
                                  " --set train.epochs=3 --set checkpoint.every_epochs=5"
                                  " --set train.accumulate_grad_batches=3 --set train.max_steps=9");
  INFO(result.err);
  REQUIRE(result.status == 0);
  CHECK_THAT(result.err, ContainsSubstring("optimizer sgd: 9 steps of 90 samples (30 per rank and "
                                           "micro-batch, 3 micro-batches accumulated)"));
  const auto epochs = metrics_of(out);
  REQUIRE(epochs.size() == 2);
  CHECK(epochs[0].at("batches") == 20);
  CHECK(epochs[0].at("global_step") == 7);
  CHECK(epochs[0].at("train_samples") == 600);
  CHECK(epochs[1].at("batches") == 6);
  CHECK(epochs[1].at("global_step") == 9);
  CHECK(epochs[1].at("train_samples") == 180);
  CHECK(epochs[1].at("lr") == 0.2);
  CHECK(summary_of(out).at("epochs_run") == 2);
  // The stop writes the last checkpoint, as the end of train.epochs does (every 5 epochs would
  // write none).
  CHECK(std::filesystem::exists(out / "checkpoints" / "epoch-0002.pt"));
}

TEST_CASE("the live progress line shows on a terminal, never in a pipe, and changes no result",
          "[cli][progress]") {
  SmallRun run;
  const auto piped_dir = run.dir / "piped";
  const auto piped = run_dptrain(run.args(piped_dir));
  REQUIRE(piped.status == 0);
  CHECK(piped.out.find('\r') == std::string::npos);
  CHECK(piped.out.find("\x1b[") == std::string::npos);
  CHECK(piped.out.find("batch 1/20") == std::string::npos);

  // script(1) gives the run a pseudo-terminal; its log (stderr) goes to a file.
  const auto tty_dir = run.dir / "tty";
  const std::string command = "env -u NO_COLOR TERM=xterm " + std::string(DPTRAIN_BINARY) + " " +
                              run.args(tty_dir) + " 2>" + (run.dir / "log").string();
  const auto terminal = run_program("/usr/bin/script", "-qefc '" + command + "' /dev/null");
  INFO(terminal.out);
  REQUIRE(terminal.status == 0);
  CHECK_THAT(terminal.out, ContainsSubstring("\r\x1b[2Kepoch 1/2  batch 1/20  ") &&
                               ContainsSubstring(" lr 0.2  "));
  // Erased before each epoch's line, which then stands alone.
  CHECK_THAT(terminal.out, ContainsSubstring("\r\x1b[2Kepoch 1/2  train loss "));
  CHECK_THAT(terminal.out, ContainsSubstring("\r\x1b[2Kepoch 2/2  train loss "));

  const auto tty_lines = screen_lines(terminal.out);
  const auto piped_lines = screen_lines(piped.out);
  REQUIRE(tty_lines.size() == piped_lines.size());
  CHECK(without_timing(tty_lines.back()) == without_timing(piped_lines.back()));
  CHECK_THAT(tty_lines.back(), ContainsSubstring("test acc: "));
  for (const char* key : {"test_acc", "test_correct", "train_loss", "epochs_run"}) {
    CHECK(summary_of(tty_dir).at(key) == summary_of(piped_dir).at(key));
  }
}

TEST_CASE("log.progress on draws the line in a pipe too (without escape codes), and off never",
          "[cli][progress]") {
  SmallRun run;
  const auto on = run_dptrain(run.args(run.dir / "on") + " --set log.progress=on");
  REQUIRE(on.status == 0);
  CHECK(on.out.rfind("epoch 1/2  batch 1/20  ", 0) == 0);
  CHECK_THAT(on.out, ContainsSubstring("\repoch 1/2  train loss "));  // after blanks over it
  // Evaluation has its line too, erased before the epoch's line.
  CHECK_THAT(on.out, ContainsSubstring("epoch 1/2  evaluating test  batch 1/"));
  CHECK(on.out.find("\x1b[") == std::string::npos);
  const std::string command = std::string(DPTRAIN_BINARY) + " " + run.args(run.dir / "off") +
                              " --set log.progress=off 2>" + (run.dir / "log").string();
  const auto off = run_program("/usr/bin/script", "-qefc '" + command + "' /dev/null");
  REQUIRE(off.status == 0);
  CHECK(off.out.find("\x1b[") == std::string::npos);
  CHECK(off.out.find("batch 1/20") == std::string::npos);
}

TEST_CASE("OMP_DYNAMIC=true is refused before a step, by name, and false trains", "[cli]") {
  // With it, a busy machine makes GNU OpenMP hand oneDNN fewer threads than its kernels wait for.
  SmallRun run;
  const auto dynamic = run_dptrain(run.args(run.dir / "dynamic") + " --set runtime.threads=2", {},
                                   {"OMP_DYNAMIC= True "});
  CHECK(dynamic.status == 3);
  CHECK_THAT(dynamic.err, ContainsSubstring("config error: OMP_DYNAMIC=true"));
  CHECK_THAT(dynamic.err, ContainsSubstring("unset OMP_DYNAMIC"));
  CHECK_FALSE(std::filesystem::exists(run.dir / "dynamic" / "metrics.jsonl"));
  const auto fixed =
      run_dptrain(run.args(run.dir / "fixed") + " --set train.epochs=1", {}, {"OMP_DYNAMIC=false"});
  INFO(fixed.err);
  CHECK(fixed.status == 0);
}
