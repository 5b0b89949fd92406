#include "support/catch.h"

#include <nlohmann/json.hpp>

#include "config/load.h"
#include "config/schema.h"
#include "core/error.h"
#include "support/fixtures.h"

using dptrain::config::Config;
using dptrain::config::name_of;
using dptrain::config::resolve_config;
using dptrain::core::Error;
using dptrain::core::ErrorCode;

namespace {

const std::vector<std::string> kModels = {"lenet"};

Config resolve(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return resolve_config(text, "exp.json", overrides, kModels);
}

// Runs `f`, expects an Error with `code`, and returns its message for further checks.
template <typename F>
std::string error_of(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.code() == code);
    CHECK_FALSE(e.hint().empty());
    return e.what();
  }
  FAIL("no error was raised");
  return {};
}

// The hint of the error with `code` that `f` raises.
template <typename F>
std::string hint_of(F&& f, ErrorCode code = ErrorCode::kConfig) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.code() == code);
    return e.hint();
  }
  FAIL("no error was raised");
  return {};
}

}  // namespace

TEST_CASE("the defaults are d2l's one-device LeNet experiment", "[config]") {
  const Config c = resolve_config(std::nullopt, "defaults", {}, kModels);
  CHECK(name_of(c.data.dataset) == "fashion-mnist");
  CHECK(c.data.batch_size == 256);
  CHECK(c.model.name == "lenet");
  CHECK(c.model.init_std == 0.01);
  CHECK(name_of(c.optimizer.name) == "sgd");
  CHECK(c.optimizer.lr == 0.2);
  CHECK(c.train.epochs == 10);
  CHECK(name_of(c.parallel.backend) == "single");
  CHECK(c.parallel.devices == std::vector<std::string>{"auto"});
  CHECK(name_of(c.precision) == "fp32");
}

TEST_CASE("a file sets keys and --set overrides it, values read as JSON or as text", "[config]") {
  const Config c = resolve(R"({"train": {"epochs": 3}, "data": {"batch_size": 128}})",
                           {"train.epochs=5", "data.dir=/tmp/x", "parallel.devices=[\"cpu\"]",
                            "data.pin_memory=true", "optimizer.lr=0.1", "name=\"quoted\""});
  CHECK(c.train.epochs == 5);
  CHECK(c.data.batch_size == 128);
  CHECK(c.data.dir == "/tmp/x");
  CHECK(c.parallel.devices == std::vector<std::string>{"cpu"});
  CHECK(c.data.pin_memory);
  CHECK(c.optimizer.lr == 0.1);
  CHECK(c.name == "quoted");
}

TEST_CASE("a single device may be written without brackets", "[config]") {
  CHECK(resolve(R"({"parallel": {"devices": "cpu"}})").parallel.devices ==
        std::vector<std::string>{"cpu"});
  CHECK(error_of([] { resolve(R"({"parallel": {"devices": 5}})"); }, ErrorCode::kConfig) ==
        "exp.json: parallel.devices: expected a list, got an integer 5");
}

TEST_CASE("an integer key takes an integer where a number key takes either", "[config]") {
  CHECK(resolve(R"({"optimizer": {"lr": 1}})").optimizer.lr == 1.0);
  const std::string msg =
      error_of([] { resolve(R"({"train": {"epochs": 2.5}})"); }, ErrorCode::kConfig);
  CHECK(msg == "exp.json: train.epochs: expected an integer, got a number 2.5");
}

TEST_CASE("an unknown key is an error naming the file and the key path", "[config]") {
  const std::string msg =
      error_of([] { resolve(R"({"data": {"batch_sise": 128}})"); }, ErrorCode::kConfig);
  CHECK(msg == "exp.json: data.batch_sise: unknown key");
}

TEST_CASE("a wrong type is an error naming the file, the key and both types", "[config]") {
  const std::string msg =
      error_of([] { resolve(R"({"data": {"batch_size": "256"}})"); }, ErrorCode::kConfig);
  CHECK(msg == "exp.json: data.batch_size: expected an integer, got a string \"256\"");
  const std::string list_msg =
      error_of([] { resolve(R"({"parallel": {"devices": ["cpu", 0]}})"); }, ErrorCode::kConfig);
  CHECK(list_msg == "exp.json: parallel.devices[1]: expected a string, got an integer 0");
}

TEST_CASE("an out-of-range value is an error naming where it came from", "[config]") {
  CHECK(error_of([] { resolve(R"({"data": {"batch_size": 0}})"); }, ErrorCode::kConfig) ==
        "exp.json: data.batch_size: must be at least 1, got 0");
  CHECK(error_of([] { resolve("{}", {"train.epochs=0"}); }, ErrorCode::kConfig) ==
        "--set train.epochs=0: train.epochs: must be at least 1, got 0");
  CHECK(error_of([] { resolve(R"({"optimizer": {"lr": -1}})"); }, ErrorCode::kConfig) ==
        "exp.json: optimizer.lr: must be > 0");
  CHECK(error_of([] { resolve(R"({"data": {"dataset": "cifar"}})"); }, ErrorCode::kConfig) ==
        "exp.json: data.dataset: unknown value \"cifar\"");
  CHECK(error_of([] { resolve(R"({"model": {"name": "resnet"}})"); }, ErrorCode::kConfig) ==
        "exp.json: model.name: unknown value \"resnet\"");
  CHECK(error_of([] { resolve(R"({"parallel": {"devices": ["gpu0"]}})"); }, ErrorCode::kConfig) ==
        "exp.json: parallel.devices: entry 0 \"gpu0\" is not a device");
}

TEST_CASE("precision and gradient clipping are checked", "[config]") {
  CHECK(name_of(resolve(R"({"precision": "bf16"})").precision) == "bf16");
  CHECK(name_of(resolve("{}", {"precision=fp16"}).precision) == "fp16");
  CHECK(resolve("{}", {"optimizer.grad_clip_norm=1"}).optimizer.grad_clip_norm == 1);
  CHECK(error_of([] { resolve(R"({"precision": "fp8"})"); }, ErrorCode::kConfig) ==
        "exp.json: precision: unknown value \"fp8\"");
  CHECK(error_of([] { resolve("{}", {"optimizer.grad_clip_norm=-1"}); }, ErrorCode::kConfig) ==
        "--set optimizer.grad_clip_norm=-1: optimizer.grad_clip_norm: must be >= 0");
}

TEST_CASE("ddp's keys are checked: devices, transport, bucket size, timeout", "[config]") {
  const Config c = resolve(R"({"parallel": {"backend": "ddp", "devices": ["cpu", "cpu"],
                                            "dist_backend": "gloo", "bucket_mb": 0.5,
                                            "timeout_s": 30}})");
  CHECK(c.parallel.devices == std::vector<std::string>{"cpu", "cpu"});
  CHECK(name_of(c.parallel.dist_backend) == "gloo");
  CHECK(c.parallel.bucket_mb == 0.5);
  CHECK(c.parallel.timeout_s == 30);
  const Config defaults = resolve("{}");
  CHECK(name_of(defaults.parallel.dist_backend) == "auto");
  CHECK(defaults.parallel.bucket_mb == 25);
  CHECK(defaults.parallel.timeout_s == 600);
  CHECK(error_of([] { resolve("{}", {"parallel.dist_backend=mpi"}); }, ErrorCode::kConfig) ==
        "--set parallel.dist_backend=mpi: parallel.dist_backend: unknown value \"mpi\"");
  CHECK(error_of([] { resolve("{}", {"parallel.bucket_mb=0"}); }, ErrorCode::kConfig) ==
        "--set parallel.bucket_mb=0: parallel.bucket_mb: must be in (0, 65536]");
  CHECK(error_of([] { resolve("{}", {"parallel.timeout_s=-1"}); }, ErrorCode::kConfig) ==
        "--set parallel.timeout_s=-1: parallel.timeout_s: must be in (0, 604800]");
  // Sizes and times that their bytes or milliseconds would overflow as int64 are refused by name.
  for (const std::string huge : {"1e13", "1e300"}) {
    CHECK(error_of([&] { resolve("{}", {"parallel.bucket_mb=" + huge}); }, ErrorCode::kConfig) ==
          "--set parallel.bucket_mb=" + huge + ": parallel.bucket_mb: must be in (0, 65536]");
    CHECK(error_of([&] { resolve("{}", {"parallel.timeout_s=" + huge}); }, ErrorCode::kConfig) ==
          "--set parallel.timeout_s=" + huge + ": parallel.timeout_s: must be in (0, 604800]");
  }
  CHECK(resolve("{}", {"parallel.bucket_mb=65536"}).parallel.bucket_mb == 65536);
  CHECK(resolve("{}", {"parallel.timeout_s=604800"}).parallel.timeout_s == 604800);
  CHECK(error_of([] { resolve(R"({"parallel": {"backend": "ddp", "devices": ["auto", "cpu"]}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: parallel.devices: \"auto\" stands for every GPU and must be the only entry");
  CHECK(error_of([] { resolve(R"({"parallel": {"backend": "ddp", "devices": []}})"); },
                 ErrorCode::kConfig) == "exp.json: parallel.devices: is empty");
  CHECK(error_of([] { resolve(R"({"parallel": {"devices": ["cpu", "cpu"]}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: parallel.devices: the single backend trains on exactly one device, got 2");
}

TEST_CASE("dp's keys are checked: repeated devices, the output device", "[config]") {
  const Config c = resolve(R"({"parallel": {"backend": "dp", "devices": ["cpu", "cpu", "cpu"],
                                            "output_device": "cpu"}})");
  CHECK(name_of(c.parallel.backend) == "dp");
  CHECK(c.parallel.devices == std::vector<std::string>{"cpu", "cpu", "cpu"});
  CHECK(c.parallel.output_device == "cpu");
  CHECK(resolve(R"({"parallel": {"backend": "dp"}})").parallel.output_device.empty());
  CHECK(error_of([] { resolve("{}", {"parallel.output_device=cpu"}); }, ErrorCode::kConfig) ==
        "--set parallel.output_device=cpu: parallel.output_device: applies to the dp backend "
        "only, not \"single\"");
  CHECK(error_of([] { resolve(R"({"parallel": {"backend": "dp", "output_device": "gpu"}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: parallel.output_device: \"gpu\" is not a device");
  CHECK(error_of([] { resolve(R"({"parallel": {"backend": "dp", "output_device": "auto"}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: parallel.output_device: \"auto\" is not a device");
  CHECK(error_of([] { resolve(R"({"parallel": {"backend": "dp", "output_device": 0}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: parallel.output_device: expected a string, got an integer 0");
  CHECK(error_of([] { resolve(R"({"parallel": {"backend": "dp", "devices": []}})"); },
                 ErrorCode::kConfig) == "exp.json: parallel.devices: is empty");
}

TEST_CASE("early stopping's keys are checked, and a val_* monitor needs a validation set",
          "[config]") {
  const Config defaults = resolve("{}");
  CHECK_FALSE(defaults.early_stopping.enabled);
  CHECK(name_of(defaults.early_stopping.monitor) == "val_loss");
  CHECK(name_of(defaults.early_stopping.mode) == "auto");
  CHECK(defaults.early_stopping.patience == 3);
  CHECK(defaults.early_stopping.restore_best);
  CHECK(defaults.early_stopping.stop_on_non_finite);
  CHECK(defaults.data.val_split == 0);
  const Config c = resolve(R"({"data": {"val_split": 0.1},
                              "early_stopping": {"enabled": true, "monitor": "val_acc",
                                                 "mode": "max", "patience": 5,
                                                 "min_delta": 0.001}})");
  CHECK(c.data.val_split == 0.1);
  CHECK(name_of(c.early_stopping.monitor) == "val_acc");
  CHECK(c.early_stopping.patience == 5);
  CHECK(error_of([] { resolve("{}", {"early_stopping.enabled=true"}); }, ErrorCode::kConfig) ==
        "--set early_stopping.enabled=true: early_stopping.enabled: monitoring \"val_loss\" "
        "needs a validation set, but data.val_split is 0");
  CHECK(error_of([] { resolve(R"({"early_stopping": {"enabled": true, "monitor": "val_acc"}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: early_stopping.monitor: monitoring \"val_acc\" needs a validation set, but "
        "data.val_split is 0");
  CHECK(error_of([] { resolve("{}", {"early_stopping.monitor=loss"}); }, ErrorCode::kConfig) ==
        "--set early_stopping.monitor=loss: early_stopping.monitor: unknown value \"loss\"");
  CHECK(error_of([] { resolve("{}", {"early_stopping.patience=0"}); }, ErrorCode::kConfig) ==
        "--set early_stopping.patience=0: early_stopping.patience: must be at least 1, got 0");
  CHECK(error_of([] { resolve("{}", {"early_stopping.min_delta=-1"}); }, ErrorCode::kConfig) ==
        "--set early_stopping.min_delta=-1: early_stopping.min_delta: must be >= 0");
  CHECK(error_of([] { resolve("{}", {"data.val_split=1"}); }, ErrorCode::kConfig) ==
        "--set data.val_split=1: data.val_split: must be in [0, 1)");
}

TEST_CASE("best.pt follows the monitor, so save_best with a val_* monitor needs a validation set",
          "[config]") {
  // Early stopping off: save_best alone must still be refused before any data is read.
  CHECK(error_of([] { resolve("{}", {"checkpoint.save_best=true"}); }, ErrorCode::kConfig) ==
        "--set checkpoint.save_best=true: checkpoint.save_best: best.pt follows "
        "early_stopping.monitor, \"val_loss\", which needs a validation set, but data.val_split "
        "is 0");
  CHECK(resolve("{}", {"checkpoint.save_best=true", "early_stopping.monitor=test_acc"})
            .checkpoint.save_best);
  CHECK(resolve("{}", {"checkpoint.save_best=true", "data.val_split=0.1"}).checkpoint.save_best);
}

TEST_CASE("the loader's keys are checked: placement, workers, prefetch", "[config]") {
  const Config c = resolve(R"({"data": {"placement": "device", "num_workers": 4,
                                        "prefetch_batches": 3, "pin_memory": true}})");
  CHECK(name_of(c.data.placement) == "device");
  CHECK(c.data.num_workers == 4);
  CHECK(c.data.prefetch_batches == 3);
  CHECK(name_of(resolve("{}").data.placement) == "auto");
  CHECK(error_of([] { resolve(R"({"data": {"placement": "gpu"}})"); }, ErrorCode::kConfig) ==
        "exp.json: data.placement: unknown value \"gpu\"");
  CHECK(error_of([] { resolve("{}", {"data.num_workers=-1"}); }, ErrorCode::kConfig) ==
        "--set data.num_workers=-1: data.num_workers: must be at least 0, got -1");
  CHECK(error_of([] { resolve("{}", {"data.num_workers=500"}); }, ErrorCode::kConfig) ==
        "--set data.num_workers=500: data.num_workers: must be at most 64, got 500");
  CHECK(error_of([] { resolve(R"({"data": {"prefetch_batches": 5000}})"); }, ErrorCode::kConfig) ==
        "exp.json: data.prefetch_batches: must be at most 1024, got 5000");
}

TEST_CASE("a folder's keys are checked: its dir, channels, classes and size", "[config]") {
  const Config c = resolve(R"({"data": {"dataset": "folder", "dir": "pets", "channels": 1,
                                        "classes": ["cat", "dog"], "image_size": [96, 64]}})");
  CHECK(c.data.dataset == dptrain::config::Dataset::kFolder);
  CHECK(c.data.classes == std::vector<std::string>{"cat", "dog"});
  CHECK(c.data.image_size == std::vector<int64_t>{96, 64});
  CHECK(error_of([] { resolve(R"({"data": {"dataset": "folder"}})"); }, ErrorCode::kConfig) ==
        "exp.json: data.dataset: is \"folder\", and data.dir, the folder to read, is empty");
  CHECK(error_of([] { resolve("{}", {"data.channels=2"}); }, ErrorCode::kConfig) ==
        "--set data.channels=2: data.channels: is 2; pictures are converted to 1 channel (grey) "
        "or 3 (RGB)");
  CHECK(error_of([] { resolve("{}", {"data.channels=3"}); }, ErrorCode::kConfig) ==
        "--set data.channels=3: data.channels: is 3, and \"fashion-mnist\" is IDX files of "
        "grey pictures");
  CHECK(error_of([] { resolve("{}", {"data.classes=[1, 2]"}); }, ErrorCode::kConfig) ==
        "--set data.classes=[1, 2]: data.classes: entry 0 is 1, not a string");
  CHECK(error_of([] { resolve("{}", {"data.image_size=[1.5, 2]"}); }, ErrorCode::kConfig) ==
        "--set data.image_size=[1.5, 2]: data.image_size: holds 1.5, not a whole number");
  CHECK(error_of([] { resolve("{}", {"data.image_size=[28]"}); }, ErrorCode::kConfig) ==
        "--set data.image_size=[28]: data.image_size: must hold [height, width], got 1 numbers");
  CHECK(error_of([] { resolve("{}", {"data.image_size=[0, 28]"}); }, ErrorCode::kConfig) ==
        "--set data.image_size=[0, 28]: data.image_size: must be at least 1, got 0");
  CHECK(error_of([] { resolve("{}", {"data.image_size=[4096, 8192]"}); }, ErrorCode::kConfig) ==
        "--set data.image_size=[4096, 8192]: data.image_size: asks for samples of 33554432 "
        "pixels, more than the 16777216 a model takes here");
  CHECK(error_of([] { resolve("{}", {"data.image_size=[20000, 1]"}); }, ErrorCode::kConfig) ==
        "--set data.image_size=[20000, 1]: data.image_size: must be at most 16384, got 20000");
  const nlohmann::json many = {{"data", {{"classes", std::vector<std::string>(100001, "c")}}}};
  CHECK(error_of([&] { resolve(many.dump()); }, ErrorCode::kConfig) ==
        "exp.json: data.classes: holds 100001 entries, more than the 100000 dptrain takes");
  CHECK(error_of([] { resolve("{}", {"data.max_image_pixels=0"}); }, ErrorCode::kConfig) ==
        "--set data.max_image_pixels=0: data.max_image_pixels: must be at least 1, got 0");
  // A normalize whose samples would not stay finite float32 values.
  const std::string tiny =
      R"(data.train_transforms=[{"name": "normalize", "mean": [0], "std": [1e-50]}])";
  // Named by the override that set the list (not "defaults"), then the place in it.
  CHECK(error_of([&] { resolve("{}", {tiny}); }, ErrorCode::kConfig) ==
        "--set " + tiny + ": data.train_transforms[0].std: must hold numbers of at least 1e-6");
  CHECK(error_of(
            [&] { resolve(R"({"data": {"eval_transforms": [{"name": "resize", "size": [0]}]}})"); },
            ErrorCode::kConfig) ==
        "exp.json: data.eval_transforms[0].size: must hold numbers of 1 or more, got 0");
  const std::string huge =
      R"(data.eval_transforms=[{"name": "normalize", "mean": [1e300], "std": [1]}])";
  CHECK_THAT(
      error_of([&] { resolve("{}", {huge}); }, ErrorCode::kConfig),
      Catch::Matchers::EndsWith(": data.eval_transforms[0].mean: must hold numbers within +-1e6"));
}

TEST_CASE("a malformed file or override is an error naming it", "[config]") {
  CHECK_THAT(error_of([] { resolve(R"({"train": {"epochs": 3,}})"); }, ErrorCode::kConfig),
             Catch::Matchers::StartsWith("exp.json: not valid JSON"));
  CHECK(error_of([] { resolve("[1, 2]"); }, ErrorCode::kConfig) ==
        "exp.json: (top level): expected an object, got a list");
  CHECK(error_of([] { resolve("{}", {"train.epochs"}); }, ErrorCode::kUsage) ==
        "--set train.epochs: expected key.path=value");
  CHECK(hint_of([] { resolve("{}", {"train.epochs"}); }, ErrorCode::kUsage) ==
        "use key=value: --set train.epochs=VALUE");
  CHECK(error_of([] { resolve("{}", {"train.epochs.x=1"}); }, ErrorCode::kConfig) ==
        "--set train.epochs.x=1: train.epochs.x: train.epochs is not an object, so it has no "
        "key \"x\"");
  CHECK(error_of([] { resolve("{}", {"train.epoch=1"}); }, ErrorCode::kConfig) ==
        "--set train.epoch=1: train.epoch: unknown key");
}

TEST_CASE("a number too large for JSON is a config error, not a crash (found by fuzzing)",
          "[config]") {
  CHECK_THAT(error_of([] { resolve(R"({"seed": 1e999})"); }, ErrorCode::kConfig),
             Catch::Matchers::StartsWith("exp.json: not valid JSON: "));
  // As an override it is text, which the integer key refuses by its type.
  CHECK_THAT(error_of([] { resolve("{}", {"train.epochs=1e999"}); }, ErrorCode::kConfig),
             Catch::Matchers::StartsWith("--set train.epochs=1e999: train.epochs: "));
}

TEST_CASE("an override that is not UTF-8 is a config error, not a crash (found by fuzzing)",
          "[config]") {
  // Refused by its type before, it made the error message itself throw (JSON text is UTF-8).
  CHECK(error_of([] { resolve("{}", {"train.epochs=2monitor\xff\xff"}); }, ErrorCode::kConfig) ==
        "--set train.epochs=...: the value is not valid UTF-8 text");
  CHECK(error_of([] { resolve("{}", {"name=caf\xe9"}); }, ErrorCode::kConfig) ==
        "--set name=...: the value is not valid UTF-8 text");
  CHECK(resolve("{}", {"name=caf\xc3\xa9"}).name == "caf\xc3\xa9");
}

TEST_CASE("a missing experiment file is a config error naming it", "[config]") {
  CHECK(error_of([] { dptrain::config::load_config("/nonexistent/exp.json", {}, kModels); },
                 ErrorCode::kConfig) == "/nonexistent/exp.json: no such experiment file");
  CHECK_THAT(hint_of([] { dptrain::config::load_config("/nonexistent/exp.json", {}, kModels); }),
             ContainsSubstring("`ls configs/`"));
}

TEST_CASE("an unknown key is answered with the keys nearest to it, by whole path or last part",
          "[config]") {
  // A key's last part alone, or its name in words: the whole path of the key.
  CHECK(error_of([] { resolve("{}", {"lr=0.1"}); }, ErrorCode::kConfig) ==
        "--set lr=0.1: lr: unknown key");
  CHECK(hint_of([] { resolve("{}", {"lr=0.1"}); }) == "did you mean optimizer.lr?");
  CHECK(hint_of([] { resolve("{}", {"optimizer.learning_rate=0.1"}); }) ==
        "did you mean optimizer.lr?");
  CHECK(hint_of([] { resolve(R"({"batch_size": 64})"); }) == "did you mean data.batch_size?");
  // A few edits away: in the section, the section itself, or its keys named beyond it.
  CHECK(hint_of([] { resolve(R"({"data": {"batch_sise": 128}})"); }) ==
        "did you mean data.batch_size?");
  CHECK(hint_of([] { resolve(R"({"optimiser": {"lr": 0.1}})"); }) == "did you mean optimizer?");
  CHECK(hint_of([] { resolve("{}", {"trian.epochs=2"}); }) == "did you mean train.epochs?");
  // Of keys as near, those of the section typed; of several as near, each.
  CHECK(hint_of([] { resolve("{}", {"log.lvl=debug"}); }) == "did you mean log.level?");
  CHECK(hint_of([] { resolve("{}", {"dirr=/d"}); }) == "did you mean data.dir or checkpoint.dir?");
  // Nothing near: the keys of the level, and where every key is listed.
  const std::string none = hint_of([] { resolve("{}", {"optimizer.zzzzzz=1"}); });
  CHECK_THAT(none, Catch::Matchers::StartsWith("known keys here: betas, eps,"));
  CHECK_THAT(none, ContainsSubstring("`dptrain config --keys`"));
}

TEST_CASE("nearest keys: the same name, its initials, or a few edits, and a long name is near none",
          "[config]") {
  using dptrain::config::near_keys;
  using Keys = std::vector<std::string>;
  CHECK(near_keys("lr") == Keys{"optimizer.lr"});
  CHECK(near_keys("bs") == Keys{"data.batch_size"});
  CHECK(near_keys("train.batch_size") == Keys{"data.batch_size"});
  CHECK(near_keys("early_stoping.patience") == Keys{"early_stopping.patience"});
  CHECK(near_keys("train.name") == Keys{"name", "model.name", "optimizer.name", "scheduler.name"});
  // The sections both share are left aside: "learning" is not two edits from "optimizer.name".
  CHECK(near_keys("optimizer.learning").empty());
  CHECK(near_keys("checkpoint.directory").empty());
  // A key of a file may be megabytes long; edits are counted in a table of both lengths.
  CHECK(near_keys(std::string(1 << 20, 'x') + ".lr").empty());
}

TEST_CASE("a JSON pointer into an experiment reads as the key path messages name", "[config]") {
  using dptrain::config::key_path_of;
  CHECK(key_path_of("/optimizer/lr") == "optimizer.lr");
  CHECK(key_path_of("/seed") == "seed");
  CHECK(key_path_of("/parallel/devices/1") == "parallel.devices[1]");
  CHECK(key_path_of("/a~1b/c~0d") == "a/b.c~d");
  CHECK(key_path_of(dptrain::config::key_pointer("data.batch_size").to_string()) ==
        "data.batch_size");
}

TEST_CASE("the resolved config written out reads back as the same experiment", "[config]") {
  const Config c = resolve(R"({"seed": 7, "train": {"epochs": 4}})", {"data.dir=/d"});
  const std::string dumped = dptrain::config::to_json(c).dump();
  CHECK(dptrain::config::to_json(resolve(dumped)).dump() == dumped);
}

TEST_CASE("every experiment file in configs/ resolves", "[config]") {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DPTRAIN_SOURCE_DIR "/configs")) {
    INFO(entry.path());
    const Config c = dptrain::config::load_config(entry.path(), {}, {"lenet", "resnet18"});
    CHECK_FALSE(c.name.empty());
    ++files;
  }
  CHECK(files >= 4);
}

TEST_CASE("optimizer, schedule and accumulation values out of range name the key", "[config]") {
  CHECK(error_of([] { resolve(R"({"scheduler": {"warmup_steps": -1}})"); }, ErrorCode::kConfig) ==
        "exp.json: scheduler.warmup_steps: must be at least 0, got -1");
  CHECK(error_of([] { resolve("{}", {"train.accumulate_grad_batches=0"}); }, ErrorCode::kConfig) ==
        "--set train.accumulate_grad_batches=0: train.accumulate_grad_batches: must be at least "
        "1, got 0");
  CHECK(error_of([] { resolve(R"({"scheduler": {"name": "linear"}})"); }, ErrorCode::kConfig) ==
        "exp.json: scheduler.name: unknown value \"linear\"");
  CHECK(error_of([] { resolve(R"({"optimizer": {"name": "adam", "betas": [0.9, 1.0]}})"); },
                 ErrorCode::kConfig) == "exp.json: optimizer.betas: each must be in [0, 1), got 1");
  CHECK(error_of([] { resolve(R"({"optimizer": {"name": "adam", "betas": [-0.1, 0.9]}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: optimizer.betas: each must be in [0, 1), got -0.1");
  CHECK(error_of([] { resolve(R"({"optimizer": {"name": "adam", "betas": [0.9]}})"); },
                 ErrorCode::kConfig) == "exp.json: optimizer.betas: must hold two numbers, got 1");
  CHECK(error_of([] { resolve(R"({"train": {"max_steps": -5}})"); }, ErrorCode::kConfig) ==
        "exp.json: train.max_steps: must be at least 0, got -5");
}

TEST_CASE("keys of another optimizer or schedule than the chosen one are errors", "[config]") {
  CHECK(error_of([] { resolve(R"({"optimizer": {"betas": [0.9, 0.99]}})"); }, ErrorCode::kConfig) ==
        "exp.json: optimizer.betas: applies to adam and adamw, but optimizer.name is \"sgd\"");
  CHECK(error_of([] { resolve(R"({"optimizer": {"name": "adamw", "momentum": 0.9}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: optimizer.momentum: applies to sgd, but optimizer.name is \"adamw\"");
  CHECK(error_of([] { resolve(R"({"optimizer": {"nesterov": true}})"); }, ErrorCode::kConfig) ==
        "exp.json: optimizer.nesterov: Nesterov momentum needs a momentum, but "
        "optimizer.momentum is 0");
  CHECK(error_of([] { resolve(R"({"scheduler": {"name": "cosine", "gamma": 0.5}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: scheduler.gamma: applies to scheduler \"step\", but scheduler.name is "
        "\"cosine\"");
  CHECK(error_of([] { resolve(R"({"scheduler": {"warmup_steps": 5, "warmup_epochs": 1}})"); },
                 ErrorCode::kConfig) ==
        "exp.json: scheduler.warmup_epochs: and scheduler.warmup_steps are both set");
  const Config adam = resolve(
      R"({"optimizer": {"name": "adam", "betas": [0.8, 0.99], "eps": 1e-6},
          "scheduler": {"name": "cosine", "min_lr": 0.001, "warmup_epochs": 1},
          "train": {"accumulate_grad_batches": 4, "max_steps": 100}})");
  CHECK(adam.optimizer.betas == std::vector<double>{0.8, 0.99});
  CHECK(adam.scheduler.warmup_epochs == 1);
  CHECK(adam.train.accumulate_grad_batches == 4);
}
