// Runs the built dptrain binary, as a user would, and checks its output and exit status.
#include "support/catch.h"

#include <csignal>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/fs.h"
#include "model/lenet.h"
#include "model/state_dict.h"
#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

std::string last_line(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// A tiny data set and quick settings, so that a whole run takes a moment.
struct TinyRun {
  TempDir dir;
  TinyRun() { write_tiny_dataset(dir / "data", 64, 32); }
  std::string args() const {
    return "--set data.dir=" + (dir / "data").string() +
           " --set data.batch_size=16 --set train.epochs=2 --set parallel.devices=cpu"
           " --set runtime.threads=1";
  }
};

// A LeNet's model.pt as Python's torch.save(net.state_dict()) keeps it: a model for evaluate and
// predict without training one.
void save_lenet(const std::filesystem::path& path) {
  dptrain::model::LeNet net;
  dptrain::model::StateDict dict;
  for (const auto& p : net->named_parameters()) dict.emplace_back(p.key(), p.value().detach());
  dptrain::model::save_state_dict(path, dict);
}

}  // namespace

TEST_CASE("the version and help flags answer and exit 0", "[cli]") {
  const auto version = run_dptrain("--version");
  CHECK(version.status == 0);
  CHECK(version.out == std::string("dptrain ") + DPTRAIN_VERSION + "\n");
  const auto help = run_dptrain("--help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, ContainsSubstring("Examples:"));
  CHECK_THAT(help.out, ContainsSubstring("train"));
}

TEST_CASE("info reports the LibTorch version, backends, devices and threads", "[cli]") {
  const auto info = run_dptrain("info");
  CHECK(info.status == 0);
  for (const char* line : {"libtorch: ", "cuda: ", "cudnn: ", "nccl: ", "gloo: ", "devices: cpu",
                           "threads: ", "cpu kernels: dptrain's ", "data fashion-mnist: "}) {
    CHECK_THAT(info.out, ContainsSubstring(line));
  }
}

TEST_CASE("config prints the resolved experiment with overrides applied", "[cli]") {
  TempDir dir;
  write_text(dir / "exp.json", R"({"name": "mine", "train": {"epochs": 4}})");
  const auto result = run_dptrain("config --config " + (dir / "exp.json").string() +
                                  " --set train.epochs=6 --set parallel.devices='[\"cpu\"]'");
  REQUIRE(result.status == 0);
  const auto resolved = nlohmann::json::parse(result.out);
  CHECK(resolved.at("name") == "mine");
  CHECK(resolved.at("train").at("epochs") == 6);
  CHECK(resolved.at("parallel").at("devices") == nlohmann::json::array({"cpu"}));
  CHECK(resolved.at("optimizer").at("lr") == 0.2);
  // An experiment's text reaches the terminal as JSON escapes, never as codes.
  write_text(dir / "loud.json", R"({"name": "\u001b]0;pwned\u0007\u009b31m\u202e"})");
  const auto loud = run_dptrain("config --config " + (dir / "loud.json").string());
  REQUIRE(loud.status == 0);
  CHECK(loud.out.find('\x1b') == std::string::npos);
  CHECK(loud.out.find("\xc2\x9b") == std::string::npos);
  CHECK(loud.out.find("\xe2\x80\xae") == std::string::npos);
  CHECK(nlohmann::json::parse(loud.out).at("name") ==
        "\x1b]0;pwned\x07\xc2\x9b"
        "31m\xe2\x80\xae");
}

TEST_CASE("a bad experiment exits 3 and names the file, the key and a hint", "[cli]") {
  TempDir dir;
  const auto file = (dir / "bad.json").string();
  write_text(file, R"({"optimizer": {"lr": "fast"}})");
  const auto result = run_dptrain("train --config " + file);
  CHECK(result.status == 3);
  CHECK_THAT(result.err,
             ContainsSubstring(file + ": optimizer.lr: expected a number, got a string"));
  CHECK_THAT(result.err, ContainsSubstring("hint: "));
  CHECK(result.out.empty());
}

TEST_CASE("an unknown option is a usage error with status 2", "[cli]") {
  const auto unknown = run_dptrain("train --epochs 3");
  CHECK(unknown.status == 2);
  CHECK(unknown.err ==
        "usage error: dptrain train has no option --epochs\n"
        "hint: config keys are set with --set: --set train.epochs=3\n");
  const auto bare = run_dptrain("");  // as cargo and kubectl: the overview
  CHECK(bare.status == 0);
  CHECK_THAT(bare.out, ContainsSubstring("Subcommands:"));
}

TEST_CASE("a missing --config file is a config error naming it, as a file that is no JSON is",
          "[cli]") {
  TempDir dir;
  write_text(dir / "bad.json", "{");
  const auto bad = run_dptrain("train --config " + (dir / "bad.json").string());
  CHECK(bad.status == 3);
  CHECK_THAT(bad.err, ContainsSubstring("error: config error: " + (dir / "bad.json").string()));
  write_text(dir / "model.pt", "unread: the experiment is resolved first");
  const std::string model = " --model " + (dir / "model.pt").string();
  for (const std::string& command :
       {std::string("train"), std::string("config"), "evaluate" + model,
        "predict" + model + " x.png", std::string("sweep --grid optimizer.lr=0.1,0.2")}) {
    INFO(command);
    const auto missing = run_dptrain(command + " --config /nonexistent.json");
    CHECK(missing.status == 3);
    CHECK_THAT(missing.err, ContainsSubstring("error: config error: "));
    CHECK_THAT(missing.err, ContainsSubstring("/nonexistent.json: no such experiment file\n"));
    CHECK_THAT(missing.err, ContainsSubstring("error: hint: `ls configs/`"));
    CHECK(missing.err.find("File does not exist") == std::string::npos);
  }
}

TEST_CASE("an unknown --set key is answered with the whole paths of the keys nearest to it",
          "[cli]") {
  const auto lr = run_dptrain("train --set lr=0.1");
  CHECK(lr.status == 3);
  CHECK_THAT(lr.err, ContainsSubstring("--set lr=0.1: lr: unknown key\n"));
  CHECK_THAT(lr.err, ContainsSubstring("hint: did you mean optimizer.lr?\n"));
  const auto words = run_dptrain("config --set optimizer.learning_rate=0.1");
  CHECK(words.status == 3);
  CHECK_THAT(words.err, ContainsSubstring("optimizer.learning_rate: unknown key\n"));
  CHECK_THAT(words.err, ContainsSubstring("hint: did you mean optimizer.lr?\n"));
}

TEST_CASE("one --set takes several pairs, and a pair typed with a space is answered joined",
          "[cli]") {
  // Pairs after one --set (or --set=), a value with a space in one word, options after them.
  const auto several = run_dptrain(
      shell_words({"config", "--set", "optimizer.lr=0.1", "train.epochs=2", "name=two words", "-q",
                   "--set=seed=3", "data.batch_size=64", "--set", "runtime.threads=1"}));
  INFO(several.err);
  REQUIRE(several.status == 0);
  const auto resolved = nlohmann::json::parse(several.out);
  CHECK(resolved.at("optimizer").at("lr") == 0.1);
  CHECK(resolved.at("train").at("epochs") == 2);
  CHECK(resolved.at("name") == "two words");
  CHECK(resolved.at("log").at("level") == "warn");
  CHECK(resolved.at("seed") == 3);
  CHECK(resolved.at("data").at("batch_size") == 64);
  CHECK(resolved.at("runtime").at("threads") == 1);

  const auto spaced = run_dptrain("train --set optimizer.lr 0.1");
  CHECK(spaced.status == 2);
  CHECK(spaced.err ==
        "usage error: --set optimizer.lr 0.1: a key and its value are one word\n"
        "hint: use key=value: --set optimizer.lr=0.1\n");
  const auto json = run_dptrain(shell_words({"config", "--set", "parallel.devices", "[\"cpu\"]"}));
  CHECK(json.status == 2);
  CHECK_THAT(json.err,
             ContainsSubstring("hint: use key=value: --set parallel.devices='[\"cpu\"]'"));

  // predict's inputs after the pairs stay inputs (missing here: each is named, exit status 4).
  TempDir dir;
  save_lenet(dir / "model.pt");
  const auto inputs = run_dptrain(
      shell_words({"predict", "--model", (dir / "model.pt").string(), "--set", "runtime.threads=1",
                   "parallel.devices=cpu", (dir / "a.png").string(), (dir / "b.png").string()}));
  CHECK(inputs.status == 4);
  CHECK_THAT(inputs.err, ContainsSubstring((dir / "a.png").string() + ": "));
  CHECK_THAT(inputs.err, ContainsSubstring((dir / "b.png").string() + ": "));
  // A file named like a pair, whose "key" is no config key nor near one, is an input too.
  const auto named = run_dptrain(
      shell_words({"predict", "--model", "model.pt", "--set", "runtime.threads=1", "img=1.png"}),
      dir.path());
  CHECK(named.status == 4);
  CHECK_THAT(named.err, ContainsSubstring("img=1.png: "));
}

TEST_CASE("evaluate and predict look at the files they name before the data or the experiment",
          "[cli]") {
  TempDir dir;
  std::filesystem::create_directories(dir / "no-data");
  const std::string no_data = " --set data.dir=" + (dir / "no-data").string();
  const auto missing = run_dptrain("evaluate --model " + (dir / "missing.pt").string() + no_data);
  CHECK(missing.status == 5);
  CHECK_THAT(missing.err,
             ContainsSubstring((dir / "missing.pt").string() + ": no such model file\n"));
  const auto folder = run_dptrain("evaluate --model " + (dir / "no-data").string() + no_data);
  CHECK(folder.status == 5);
  CHECK_THAT(folder.err, ContainsSubstring((dir / "no-data").string() + ": is a directory"));
  save_lenet(dir / "model.pt");
  const auto report = run_dptrain("evaluate --model " + (dir / "model.pt").string() + no_data +
                                  " --output " + (dir / "nope" / "report.json").string());
  CHECK(report.status == 5);
  CHECK_THAT(report.err, ContainsSubstring((dir / "nope" / "report.json").string() +
                                           ": no folder " + (dir / "nope").string()));
  const auto predict = run_dptrain("predict --model " + (dir / "missing.pt").string() + " x.png");
  CHECK(predict.status == 5);
  CHECK_THAT(predict.err,
             ContainsSubstring((dir / "missing.pt").string() + ": no such model file\n"));
}

TEST_CASE("missing data exits 4 and says where it looked", "[cli]") {
  TempDir dir;
  const auto result = run_dptrain("train --set data.dir=" + dir.path().string());
  CHECK(result.status == 4);
  CHECK_THAT(result.err, ContainsSubstring("missing train-images-idx3-ubyte"));
}

TEST_CASE("train writes its files and ends stdout with d2l's line", "[cli]") {
  TinyRun tiny;
  const auto out = tiny.dir / "out";
  const auto result = run_dptrain("train " + tiny.args() + " --output " + out.string());
  REQUIRE(result.status == 0);
  CHECK_THAT(last_line(result.out),
             Catch::Matchers::Matches(R"(test acc: \d\.\d\d, [0-9.]+ sec/epoch on \[cpu\])"));
  for (const char* file : {"config.json", "metrics.jsonl", "summary.json"}) {
    CHECK(std::filesystem::exists(out / file));
  }
  const auto summary = nlohmann::json::parse(dptrain::core::read_text_file(out / "summary.json"));
  CHECK(summary.at("epochs_run") == 2);

  const auto again = run_dptrain("train " + tiny.args() + " --output " + out.string());
  CHECK(again.status == 5);
  CHECK_THAT(again.err, ContainsSubstring("already holds a run's results"));
  CHECK(run_dptrain("train " + tiny.args() + " --output " + out.string() + " --overwrite").status ==
        0);
}

TEST_CASE("without --output a run goes to runs/<name>/<timestamp>", "[cli]") {
  TinyRun tiny;
  const auto result = run_dptrain("train " + tiny.args() + " --set name=tiny", tiny.dir.path());
  REQUIRE(result.status == 0);
  const auto runs = tiny.dir / "runs" / "tiny";
  REQUIRE(std::filesystem::is_directory(runs));
  const auto run = *std::filesystem::directory_iterator(runs);
  CHECK(std::filesystem::exists(run.path() / "summary.json"));
}

TEST_CASE("MNIST trains from data.dir with data.dataset mnist", "[cli]") {
  TinyRun tiny;
  const auto out = tiny.dir / "out";
  const auto result =
      run_dptrain("train " + tiny.args() + " --set data.dataset=mnist --output " + out.string());
  REQUIRE(result.status == 0);
  CHECK_THAT(result.err, ContainsSubstring("data: mnist from " + (tiny.dir / "data").string()));
  const auto summary = nlohmann::json::parse(dptrain::core::read_text_file(out / "summary.json"));
  CHECK(summary.at("epochs_run") == 2);
}

TEST_CASE("Ctrl-C mid-epoch stops a run with workers cleanly, exit status 130", "[cli]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 4000, 32);
  const auto out = dir / "out";
  BackgroundRun run({"train", "--set", "data.dir=" + (dir / "data").string(), "--set",
                     "data.batch_size=2", "--set", "data.num_workers=2", "--set", "train.epochs=50",
                     "--set", "parallel.devices=cpu", "--set", "runtime.threads=1", "--set",
                     "log.every_steps=1", "--output", out.string(), "--overwrite"});
  REQUIRE(run.wait_for_stderr("epoch 1 batch 5/2000", 60));
  run.signal(SIGINT);
  const auto result = run.finish(10);
  CHECK(result.status == 130);
  CHECK_THAT(result.err, Catch::Matchers::Matches(
                             R"((.|\n)*interrupted: interrupted by Ctrl-C \(SIGINT\) in epoch 1 )"
                             R"(after batch \d+ of 2000(.|\n)*)"));
  // The hint is the command that goes on: this one, resuming.
  CHECK_THAT(result.err,
             ContainsSubstring("hint: the finished epochs are in the run folder's "
                               "metrics.jsonl; go on from the newest checkpoint with: " +
                               std::string(DPTRAIN_BINARY) + " train --set data.dir="));
  // Without --overwrite, which typed again would start over.
  CHECK_THAT(result.err, ContainsSubstring("--output " + out.string() + " --resume auto\n"));
  CHECK(std::filesystem::exists(out / "config.json"));
  CHECK_FALSE(std::filesystem::exists(out / "summary.json"));
}

TEST_CASE("the torchrun example that train's help prints trains on this machine's torchrun",
          "[cli][ddp][torchrun][slow]") {
  if (run_program("/bin/sh", "-c 'torchrun --help >/dev/null 2>&1'").status != 0) {
    DPTRAIN_SKIP("no torchrun here (Debian's python3-torch has one)");
  }
  const std::string help = run_dptrain("train --help").out;
  const size_t from = help.find("torchrun ");
  const std::string config = "configs/ddp_cpu.json";
  const size_t to = help.find(config, from);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  // The example's words as printed (a continued line joined), with the built binary for dptrain.
  std::istringstream printed(help.substr(from, to + config.size() - from));
  std::vector<std::string> words;
  for (std::string w; printed >> w;) {
    if (w == "\\") continue;
    words.push_back(w == "dptrain" ? std::string(DPTRAIN_BINARY) : w);
  }
  TempDir dir;
  write_tiny_dataset(dir / "data", 120, 40);
  for (const std::string& set :
       {"data.dir=" + (dir / "data").string(), std::string("data.batch_size=20"),
        std::string("train.epochs=1"), std::string("runtime.threads=1")}) {
    words.insert(words.end(), {"--set", set});
  }
  words.insert(words.end(), {"--output", (dir / "run").string()});
  // torchrun's --master_port (29500 by default, which examples_test's torchrun also meets).
  const auto run =
      run_program("/bin/sh", "-c " + shell_words({shell_words(words)}), DPTRAIN_SOURCE_DIR,
                  {"PET_MASTER_PORT=" + std::to_string(free_port())});
  INFO(shell_words(words) << "\n" << run.out << run.err);
  CHECK(run.status == 0);
  CHECK_THAT(run.out, ContainsSubstring("test acc: "));
  CHECK(summary_of(dir / "run").at("world_size") == 2);
}

TEST_CASE("a command whose results cannot all reach stdout exits 5 and says where they went",
          "[cli]") {
  TinyRun tiny;
  const auto run = tiny.dir / "run";
  const auto trained = run_dptrain("train " + tiny.args() + " --output " + run.string());
  INFO(trained.err);
  REQUIRE(trained.status == 0);
  const std::string model = (run / "model.pt").string();
  const std::string images = (tiny.dir / "data" / "t10k-images-idx3-ubyte.gz").string();
  const std::vector<std::vector<std::string>> commands = {
      {"config"},
      {"config", "--keys"},
      {"info"},
      {"--help"},
      {"--version"},
      {"predict", "--model", model, "--json", images},
      {"predict", "--model", model, images},
      {"evaluate", "--model", model},
      {"compare", run.string()},
      {"compare", run.string(), "--format", "csv"}};
  for (const auto& command : commands) {
    // /dev/full: every write fails with ENOSPC, as on a full disk.
    std::vector<std::string> words = {"-c", "exec \"$0\" \"$@\" >/dev/full", DPTRAIN_BINARY};
    words.insert(words.end(), command.begin(), command.end());
    const auto full = run_program("/bin/sh", shell_words(words));
    INFO(shell_words(command) << "\n" << full.err);
    CHECK(full.status == 5);
    CHECK_THAT(full.err, ContainsSubstring("I/O error: stdout (/dev/full): No space left on "
                                           "device: the results could not all be written"));
    // The same to a file: what it printed is all there, and it exits 0.
    words[1] = "exec \"$0\" \"$@\" >" + (tiny.dir / "out.txt").string();
    const auto kept = run_program("/bin/sh", shell_words(words));
    CHECK(kept.status == 0);
    CHECK_FALSE(core::read_text_file(tiny.dir / "out.txt").empty());
  }
}
