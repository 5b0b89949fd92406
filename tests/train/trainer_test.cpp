#include "support/catch.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/load.h"
#include "core/fs.h"
#include "data/classes.h"
#include "support/fixtures.h"
#include "train/trainer.h"

using namespace dptrain;
using dptrain::testing::TempDir;

namespace {

config::Config short_run(const std::vector<std::string>& extra) {
  std::vector<std::string> overrides = {"data.dir=" + testing::real_data_dir().string(),
                                        "parallel.devices=cpu", "runtime.threads=1",
                                        "log.level=warn"};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return config::resolve_config(std::nullopt, "test", overrides, {"lenet"});
}

// Every figure of an epoch but its timings.
std::vector<double> figures(const run::EpochMetrics& m) {
  return {m.train_loss,
          m.train_acc,
          m.test_loss,
          m.test_acc,
          static_cast<double>(m.train_samples),
          static_cast<double>(m.batches)};
}

}  // namespace

TEST_CASE("the same seed gives identical metrics, another seed different ones", "[train][slow]") {
  const std::vector<std::string> quick = {"train.epochs=2", "train.limit_train_batches=15",
                                          "train.limit_eval_batches=4"};
  auto run = [&](const std::string& seed) {
    TempDir out;
    auto overrides = quick;
    overrides.push_back("seed=" + seed);
    std::ostringstream console;
    return train::train(short_run(overrides), out.path(), console).epochs;
  };
  const auto a = run("5");
  const auto b = run("5");
  const auto c = run("6");
  REQUIRE(a.size() == 2);
  for (size_t e = 0; e < a.size(); ++e) {
    CHECK(figures(a[e]) == figures(b[e]));
    CHECK(figures(a[e]) != figures(c[e]));
  }
  CHECK(a[0].train_samples == 15 * 256);
  CHECK(a[0].batches == 15);
}

TEST_CASE("workers and data placement do not change what a run computes", "[train][slow]") {
  auto run = [](const std::vector<std::string>& loader) {
    TempDir out;
    std::vector<std::string> overrides = {"train.epochs=2", "train.limit_train_batches=8",
                                          "train.limit_eval_batches=3"};
    overrides.insert(overrides.end(), loader.begin(), loader.end());
    std::ostringstream console;
    return train::train(short_run(overrides), out.path(), console).epochs;
  };
  const auto reference = run({"data.placement=host", "data.num_workers=0"});
  REQUIRE(reference.size() == 2);
  for (const auto& loader : std::vector<std::vector<std::string>>{
           {"data.placement=host", "data.num_workers=3", "data.prefetch_batches=2"},
           {"data.placement=device"}}) {
    INFO(loader[0] << (loader.size() > 1 ? " " + loader[1] : ""));
    const auto epochs = run(loader);
    REQUIRE(epochs.size() == 2);
    for (size_t e = 0; e < epochs.size(); ++e) CHECK(figures(epochs[e]) == figures(reference[e]));
  }
}

TEST_CASE("a few hundred steps on Fashion-MNIST learn far above chance", "[train][slow]") {
  TempDir out;
  std::ostringstream console;
  // d2l's init (std 0.01) sits on the ln(10) loss plateau for about an epoch, in d2l's own code
  // too; a wider init shows learning within 300 steps.
  const auto result = train::train(short_run({"train.epochs=2", "train.limit_train_batches=150",
                                              "runtime.threads=2", "model.init_std=0.1"}),
                                   out.path(), console);
  REQUIRE(result.epochs.size() == 2);
  CHECK(result.epochs[1].train_samples == 150 * 256);
  // Chance is 0.10. Over 9 runs (seeds 1 to 6, and 1 to 3 with oneDNN held to SSE4.1 and ATen's
  // kernels to their baseline) these steps reached 0.743 to 0.797, and the second epoch's loss
  // was 0.58 to 0.61 against the first's 0.96 to 1.11: how far above 0.5 a run lands hangs on
  // the CPU's rounding (docs/contributing.md, "Every CPU class"), that it lands there does not.
  CHECK(result.summary.test_acc > 0.5);
  CHECK(result.epochs[1].train_loss < 0.8 * result.epochs[0].train_loss);
}

TEST_CASE("a run writes config.json, metrics.jsonl, summary.json and d2l's line", "[train]") {
  TempDir out;
  std::ostringstream console;
  // Epoch lines print at log.level info (the process's logger stays at warn: main_test.cpp).
  const auto config = short_run({"train.epochs=3", "train.limit_train_batches=2",
                                 "train.limit_eval_batches=2", "log.level=info"});
  train::train(config, out.path(), console);

  // The experiment as resolved, with what the data is filled in.
  const auto resolved = nlohmann::json::parse(core::read_text_file(out / "config.json"));
  config::Config with_facts = config;
  with_facts.data.channels = 1;
  with_facts.data.classes = data::class_names("fashion-mnist");
  with_facts.data.image_size = {28, 28};
  CHECK(resolved == config::to_json(with_facts));

  std::ifstream metrics(out / "metrics.jsonl");
  std::string line;
  int64_t epoch = 0;
  while (std::getline(metrics, line)) {
    const auto record = nlohmann::json::parse(line);
    CHECK(record.at("epoch") == ++epoch);
    CHECK(record.at("train_samples") == 512);
    for (const char* key : {"train_loss", "train_acc", "test_loss", "test_acc", "train_sec",
                            "eval_sec", "samples_per_sec"}) {
      CHECK(record.at(key).is_number());
    }
  }
  CHECK(epoch == 3);

  const auto summary = nlohmann::json::parse(core::read_text_file(out / "summary.json"));
  for (const char* key :
       {"test_acc", "test_loss", "train_loss", "train_acc", "sec_per_epoch", "samples_per_sec",
        "epochs_run", "backend", "devices", "world_size", "precision", "libtorch_version"}) {
    CHECK(summary.contains(key));
  }
  CHECK(summary.at("epochs_run") == 3);
  CHECK(summary.at("backend") == "single");
  CHECK(summary.at("devices") == nlohmann::json::array({"cpu"}));
  CHECK(summary.at("world_size") == 1);
  CHECK(summary.at("precision") == "fp32");

  std::string last;
  std::istringstream lines(console.str());
  int count = 0;
  while (std::getline(lines, line)) {
    last = line;
    ++count;
  }
  CHECK(count == 4);  // three epoch lines, then d2l's
  CHECK_THAT(last, Catch::Matchers::Matches(R"(test acc: \d\.\d\d, [0-9.]+ sec/epoch on \[cpu\])"));
}
