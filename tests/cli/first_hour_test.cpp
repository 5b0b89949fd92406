// A new user's first hour, through the built binary: a failed start leaves nothing that blocks
// the retry, evaluate and predict take the model's own run, mistakes on the command line are
// answered with what was meant, output to pipes and dumb terminals carries no escape codes, errors
// about files say what is wrong once, and a run folder says how it was made.
#include "support/catch.h"

#include <torch/cuda.h>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

// 120 training and 40 test images in batches of 20; one thread.
struct Tiny {
  TempDir dir;
  Tiny() { write_tiny_dataset(dir / "data", 120, 40); }
  std::vector<std::string> train(const std::filesystem::path& out,
                                 const std::vector<std::string>& more = {}) const {
    std::vector<std::string> args = {"train", "--output", out.string()};
    for (const std::string& setting :
         {"data.dir=" + (dir / "data").string(), std::string("data.batch_size=20"),
          std::string("train.epochs=2"), std::string("runtime.threads=1"),
          std::string("parallel.devices=cpu")}) {
      args.insert(args.end(), {"--set", setting});
    }
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
};

ProcessResult dptrain_with(const std::vector<std::string>& args,
                           const std::vector<std::string>& env = {}) {
  return run_dptrain(shell_words(args), {}, env);
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a start that fails leaves nothing that blocks the retry", "[cli][first-hour]") {
  Tiny tiny;
  const auto out = tiny.dir / "e4";
  write_text(tiny.dir / "damaged.pt", "PK\x03\x04 and then nothing a zip would hold");
  write_tiny_dataset(tiny.dir / "bad-data", 120, 40);
  write_text(tiny.dir / "bad-data" / "train-images-idx3-ubyte.gz", "not gzip, not IDX");

  struct Failure {
    const char* what;
    std::vector<std::string> more;
    int status;
  };
  for (const Failure& f : {
           Failure{"a damaged --init-from", {"--init-from", (tiny.dir / "damaged.pt").string()}, 5},
           Failure{"a damaged --resume", {"--resume", (tiny.dir / "damaged.pt").string()}, 5},
           Failure{"a config error", {"--set", "optimizer.lr=-1"}, 3},
           Failure{"a damaged data folder",
                   {"--set", "data.dir=" + (tiny.dir / "bad-data").string()},
                   4},
       }) {
    INFO(f.what);
    const auto failed = dptrain_with(tiny.train(out, f.more));
    CHECK(failed.status == f.status);
    CHECK_FALSE(std::filesystem::exists(out));
  }
  const auto retry = dptrain_with(tiny.train(out));
  INFO(retry.err);
  CHECK(retry.status == 0);
  CHECK(std::filesystem::exists(out / "model.pt"));
}

TEST_CASE("evaluate takes the run's own experiment: its held-out samples give its figures",
          "[cli][first-hour][evaluate]") {
  Tiny tiny;
  const auto run = tiny.dir / "run";
  const auto trained =
      dptrain_with(tiny.train(run, {"--set", "data.val_split=0.25", "--set", "seed=7"}));
  REQUIRE(trained.status == 0);
  const auto summary = summary_of(run);
  REQUIRE(summary.contains("val_loss"));

  for (const auto& model : {run / "model.pt", run / "checkpoints" / "epoch-0002.pt"}) {
    INFO(model);
    const auto report = tiny.dir / "report.json";
    const auto r = dptrain_with(
        {"evaluate", "--model", model.string(), "--split", "val", "--output", report.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(dptrain::core::read_text_file(report));
    CHECK(j.at("samples") == 30);  // a quarter of 120 held out, as in training
    CHECK(j.at("loss").get<double>() == Approx(summary.at("val_loss").get<double>()).epsilon(1e-6));
    CHECK(j.at("accuracy") == summary.at("val_acc"));
    const std::string source = model.filename() == "model.pt"
                                   ? (run / "config.json").string() + " (beside the model)"
                                   : std::string("the checkpoint's own");
    CHECK_THAT(r.err, ContainsSubstring("with the experiment of " + source));
    CHECK_THAT(r.err, !ContainsSubstring("optimizer"));  // nothing of training's plan
  }

  // --set goes over the run's experiment; without a run beside it, model.pt's own record of it
  // (the run's hold-out included), said so.
  const auto other_seed = dptrain_with(
      {"evaluate", "--model", (run / "model.pt").string(), "--split", "val", "--set", "seed=8"});
  CHECK(other_seed.status == 0);
  CHECK_THAT(other_seed.out, ContainsSubstring("val set: 30 samples"));
  std::filesystem::copy_file(run / "model.pt", tiny.dir / "loose.pt");
  const auto loose = dptrain_with({"evaluate", "--model", (tiny.dir / "loose.pt").string(), "--set",
                                   "data.dir=" + (tiny.dir / "data").string()});
  CHECK(loose.status == 0);
  CHECK_THAT(loose.err, ContainsSubstring("with the experiment of the model file's own"));
  CHECK_THAT(loose.err, ContainsSubstring("data: 90 training samples, 30 held out"));
}

TEST_CASE("mistyped subcommands and options are answered with what was meant",
          "[cli][first-hour]") {
  const auto typo = run_dptrain("trian");
  CHECK(typo.status == 2);
  CHECK(typo.err ==
        "usage error: dptrain has no subcommand \"trian\"\nhint: did you mean `dptrain train`?\n");
  const auto option = run_dptrain("train --outptu runs/x");
  CHECK(option.status == 2);
  CHECK_THAT(option.err, ContainsSubstring("hint: did you mean --output?"));
  const auto key = run_dptrain("train --lr 0.1");
  CHECK(key.status == 2);
  CHECK_THAT(key.err,
             ContainsSubstring("hint: config keys are set with --set: --set optimizer.lr=0.1"));
  const auto required = run_dptrain("evaluate --modle m.pt");  // before "--model is required"
  CHECK(required.status == 2);
  CHECK_THAT(required.err, ContainsSubstring("hint: did you mean --model?"));
  const auto dashes = run_dptrain("train ---");
  CHECK(dashes.status == 2);
  CHECK_THAT(dashes.err, ContainsSubstring("dptrain train has no option ---"));
  const auto two_keys = run_dptrain("train --dir=/data");
  CHECK_THAT(two_keys.err,
             ContainsSubstring("--set data.dir=/data, or --set checkpoint.dir=/data"));

  const auto help = run_dptrain("help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, ContainsSubstring("Subcommands:"));
  // Each subcommand's help shows its own examples, not the others'.
  const auto train_help = run_dptrain("help train");
  CHECK(train_help.status == 0);
  CHECK_THAT(train_help.out, ContainsSubstring("dptrain train --output runs/try --resume auto"));
  CHECK_THAT(train_help.out, !ContainsSubstring("dptrain predict"));
  const auto predict_help = run_dptrain("predict --help");
  CHECK_THAT(predict_help.out, ContainsSubstring("dptrain predict --model runs/X/model.pt"));
  CHECK_THAT(predict_help.out, !ContainsSubstring("dptrain train"));
  CHECK(run_dptrain("help trian").err.find("did you mean `dptrain train`?") != std::string::npos);
}

TEST_CASE("quiet (-q) leaves warnings and the final line, verbose (-v) adds debug lines",
          "[cli][first-hour]") {
  Tiny tiny;
  const auto quiet = dptrain_with(tiny.train(tiny.dir / "quiet", {"-q"}));
  REQUIRE(quiet.status == 0);
  CHECK_THAT(quiet.err, !ContainsSubstring("] info: "));
  CHECK(count_of(quiet.out, "\n") == 1);
  CHECK_THAT(quiet.out, Catch::Matchers::StartsWith("test acc: "));
  const auto normal = dptrain_with(tiny.train(tiny.dir / "normal"));
  CHECK(count_of(normal.out, "\n") == 3);  // two epoch lines and d2l's
  CHECK_THAT(normal.err, ContainsSubstring("] info: "));
  CHECK_THAT(normal.err, !ContainsSubstring("] debug: "));
  const auto verbose = dptrain_with(tiny.train(tiny.dir / "verbose", {"-v"}));
  CHECK_THAT(verbose.err, ContainsSubstring("] debug: "));
  CHECK(run_dptrain("train -q -v").status == 2);
  const auto quiet_config = run_dptrain("config -q");
  CHECK(nlohmann::json::parse(quiet_config.out).at("log").at("level") == "warn");
}

TEST_CASE("NO_COLOR and TERM=dumb get no escape codes on a terminal", "[cli][first-hour]") {
  Tiny tiny;
  for (const char* env : {"NO_COLOR=1 TERM=xterm", "TERM=dumb"}) {
    INFO(env);
    const auto out = tiny.dir / (std::string("out-") + (env[0] == 'N' ? "nocolor" : "dumb"));
    // script(1) gives the run a pseudo-terminal for stdout and stderr alike.
    const std::string command = "env -u NO_COLOR " + std::string(env) + " " + DPTRAIN_BINARY + " " +
                                shell_words(tiny.train(out, {"--set", "log.every_steps=1"}));
    const auto terminal =
        run_program("/usr/bin/script", "-qefc " + shell_words({command}) + " /dev/null");
    INFO(terminal.out);
    REQUIRE(terminal.status == 0);
    CHECK(terminal.out.find("\x1b[") == std::string::npos);
    CHECK_THAT(terminal.out, ContainsSubstring("test acc: "));
  }
  const auto colour =
      run_program("/usr/bin/script",
                  "-qefc " +
                      shell_words({"env -u NO_COLOR TERM=xterm " + std::string(DPTRAIN_BINARY) +
                                   " " + shell_words(tiny.train(tiny.dir / "colour"))}) +
                      " /dev/null");
  CHECK(colour.out.find("\x1b[") != std::string::npos);  // the control: escapes where allowed
}

TEST_CASE("an empty, a foreign and a truncated file are each named once, in plain words",
          "[cli][first-hour]") {
  Tiny tiny;
  write_text(tiny.dir / "empty.json", "\n");
  const auto empty_config = run_dptrain("config --config " + (tiny.dir / "empty.json").string());
  CHECK(empty_config.status == 3);
  CHECK_THAT(empty_config.err,
             ContainsSubstring("config error: " + (tiny.dir / "empty.json").string() +
                               ": the file is empty\n"));
  write_text(tiny.dir / "broken.json", "{\"train\": {\"epochs\": 2,}}");
  const auto broken = run_dptrain("config --config " + (tiny.dir / "broken.json").string());
  CHECK_THAT(broken.err, ContainsSubstring("broken.json: not valid JSON: line 1, column 24: "
                                           "unexpected '}'; expected string literal\n"));
  CHECK_THAT(broken.err, !ContainsSubstring("json.exception"));

  REQUIRE(dptrain_with(tiny.train(tiny.dir / "run")).status == 0);
  const std::string model = dptrain::core::read_text_file(tiny.dir / "run" / "model.pt");
  write_text(tiny.dir / "empty.pt", "");
  write_text(tiny.dir / "notes.pt", "weights are in the other folder\n");
  write_text(tiny.dir / "cut.pt", model.substr(0, model.size() / 2));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty.pt", "empty.pt: the file is empty (0 bytes)\n"},
      {"notes.pt", "notes.pt: a text file (32 bytes), where torch.save writes a zip archive\n"},
      {"cut.pt", "cut.pt: the file is cut short (" + std::to_string(model.size() / 2) +
                     " bytes): a zip archive whose end, its directory, is missing\n"}};
  for (const auto& [name, message] : cases) {
    INFO(name);
    for (const char* subcommand : {"evaluate", "predict"}) {
      std::vector<std::string> args = {subcommand, "--model", (tiny.dir / name).string(), "--set",
                                       "data.dir=" + (tiny.dir / "data").string()};
      if (subcommand == std::string("predict")) {
        args.push_back((tiny.dir / "data" / "t10k-images-idx3-ubyte.gz").string());
      }
      const auto r = dptrain_with(args);
      CHECK(r.status == 5);
      CHECK_THAT(r.err, ContainsSubstring("I/O error: " + (tiny.dir / name).string() + ": " +
                                          message.substr(name.size() + 2)));
      CHECK(count_of(r.err, "zip archive") <= 1);
    }
    const auto resume = dptrain_with(
        tiny.train(tiny.dir / ("resume-" + name), {"--resume", (tiny.dir / name).string()}));
    CHECK(resume.status == 5);
    CHECK_THAT(resume.err, ContainsSubstring((tiny.dir / name).string() + ": " +
                                             message.substr(name.size() + 2)));
  }
}

TEST_CASE("summary.json says how the run was made, and info --json serves scripts",
          "[cli][first-hour]") {
  Tiny tiny;
  const auto args = tiny.train(tiny.dir / "run");
  REQUIRE(dptrain_with(args).status == 0);
  const auto summary = summary_of(tiny.dir / "run");
  std::vector<std::string> command = {DPTRAIN_BINARY};
  command.insert(command.end(), args.begin(), args.end());
  CHECK(summary.at("command") == command);
  const std::string iso = R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)";
  CHECK_THAT(summary.at("started_at").get<std::string>(), Catch::Matchers::Matches(iso));
  CHECK_THAT(summary.at("finished_at").get<std::string>(), Catch::Matchers::Matches(iso));
  CHECK(summary.at("started_at") <= summary.at("finished_at"));
  CHECK(summary.at("hosts").size() == 1);
  CHECK_FALSE(summary.at("hosts")[0].get<std::string>().empty());
  CHECK(summary.at("dptrain_version") == DPTRAIN_VERSION);
  CHECK(summary.at("world_size") == 1);
  CHECK_FALSE(summary.at("libtorch_version").get<std::string>().empty());

  const auto info = run_dptrain("info --json");
  REQUIRE(info.status == 0);
  const auto j = nlohmann::json::parse(info.out);
  CHECK(j.at("dptrain_version") == DPTRAIN_VERSION);
  CHECK(j.at("libtorch_version") == summary.at("libtorch_version"));
  CHECK(j.at("devices")[0] == "cpu");
  CHECK(j.at("gloo").at("available").is_boolean());
  CHECK(j.at("data").contains("fashion-mnist"));
  CHECK(j.at("kernel_isa").at("runs_here") == true);
  CHECK(summary.at("cpu_kernels") == j.at("kernel_isa").at("level").get<std::string>() + ", ATen " +
                                         j.at("aten_cpu_capability").get<std::string>());
}

TEST_CASE(
    "a GPU experiment on a machine without one is refused before any rank starts, and dp "
    "over one device says what it does",
    "[cli][first-hour]") {
  if (torch::cuda::is_available()) DPTRAIN_SKIP("this machine has a GPU");
  Tiny tiny;
  TempDir out;
  const auto gpu = dptrain_with(
      {"train", "--config", std::string(DPTRAIN_SOURCE_DIR) + "/configs/d2l_2gpu_ddp.json", "--set",
       "data.dir=" + (tiny.dir / "data").string(), "--output", (out / "gpu").string()});
  INFO(gpu.err);
  CHECK(gpu.status == 6);
  CHECK(count_of(gpu.err, "\n") == 2);  // the error and its hint, once
  CHECK_THAT(gpu.err, ContainsSubstring("rank 0 (local rank 0): parallel.devices[0]: \"cuda:0\" "
                                        "asks for a GPU, but this LibTorch sees none") &&
                          !ContainsSubstring("rendezvous") && !ContainsSubstring("started"));
  CHECK_FALSE(std::filesystem::exists(out / "gpu"));

  const auto one = dptrain_with(tiny.train(out / "dp", {"--set", "parallel.backend=dp"}));
  INFO(one.err);
  CHECK(one.status == 0);
  CHECK_THAT(one.err, ContainsSubstring("parallel.backend \"dp\" over one device ([cpu]) trains "
                                        "as \"single\" does"));
}
