#include "config/load.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "config/json_merge.h"
#include "core/error.h"
#include "core/fs.h"

namespace dptrain::config {
namespace {

using core::Error;
using core::ErrorCode;
using nlohmann::json;

// Beyond these a typo is likelier than a need: each worker is a thread, each prefetched batch a
// buffer (pinned memory, with pin_memory).
constexpr int64_t kMaxWorkers = 64;
constexpr int64_t kMaxPrefetch = 1024;

json parse_json_text(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(ErrorCode::kConfig, source + ": not valid JSON: " + e.what(),
                "check commas, quotes and brackets near the position given");
  }
}

json parse_override_value(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::parse_error&) {
    return text;  // a plain word such as cpu or fashion-mnist
  }
}

void apply_override(json& tree, const std::string& text, KeySources& sources) {
  const std::string source = "--set " + text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(ErrorCode::kUsage, source + ": expected key.path=value",
                "for example --set train.epochs=2 or --set parallel.devices='[\"cpu\"]'");
  }
  set_checked(tree, text.substr(0, eq), parse_override_value(text.substr(eq + 1)), source, sources);
}

// Range and vocabulary checks, each naming where the offending value came from.
class Checker {
 public:
  explicit Checker(const KeySources& sources) : sources_(sources) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what, const std::string& hint,
                         ErrorCode code = ErrorCode::kConfig) const {
    const auto it = sources_.find(key);
    const std::string source = it == sources_.end() ? "defaults" : it->second;
    throw Error(code, source + ": " + key + ": " + what, hint);
  }

  // Whether a file or an override set `key` (else it has its default).
  bool given(const std::string& key) const { return sources_.count(key) > 0; }

  void at_least(const std::string& key, int64_t value, int64_t min) const {
    if (value < min) {
      fail(key, "must be at least " + std::to_string(min) + ", got " + std::to_string(value),
           "use a value of " + std::to_string(min) + " or more");
    }
  }

  void at_most(const std::string& key, int64_t value, int64_t max) const {
    if (value > max) {
      fail(key, "must be at most " + std::to_string(max) + ", got " + std::to_string(value),
           "use a value of " + std::to_string(max) + " or less");
    }
  }

  void one_of(const std::string& key, const std::string& value,
              const std::vector<std::string>& allowed) const {
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(key, "unknown value \"" + value + "\"", "use one of: " + list);
  }

 private:
  const KeySources& sources_;
};

void check_devices(const Checker& check, const ParallelConfig& p) {
  static const std::regex kDevice("auto|cpu|cuda(:[0-9]+)?");
  for (size_t i = 0; i < p.devices.size(); ++i) {
    if (!std::regex_match(p.devices[i], kDevice)) {
      check.fail("parallel.devices",
                 "entry " + std::to_string(i) + " \"" + p.devices[i] + "\" is not a device",
                 "use \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"");
    }
  }
  if (p.backend == "single" && p.devices.size() != 1) {
    check.fail(
        "parallel.devices",
        "the single backend trains on exactly one device, got " + std::to_string(p.devices.size()),
        "give one device: [\"auto\"], [\"cpu\"] or [\"cuda:0\"]");
  }
  if (p.devices.empty()) {
    check.fail("parallel.devices", "is empty",
               "give one device per rank, such as [\"cpu\", \"cpu\"]");
  }
  if (p.devices.size() > 1 &&
      std::find(p.devices.begin(), p.devices.end(), "auto") != p.devices.end()) {
    check.fail("parallel.devices", "\"auto\" stands for every GPU and must be the only entry",
               "use [\"auto\"], or name each device: [\"cuda:0\", \"cuda:1\"]");
  }
  if (p.output_device.empty()) return;
  if (p.backend != "dp") {
    check.fail("parallel.output_device",
               "applies to the dp backend only, not \"" + p.backend + "\"",
               "remove it, or use parallel.backend \"dp\"");
  }
  if (p.output_device == "auto" || !std::regex_match(p.output_device, kDevice)) {
    check.fail("parallel.output_device", "\"" + p.output_device + "\" is not a device",
               "use \"cpu\", \"cuda\" or \"cuda:N\", or leave it empty for the first device");
  }
}

// save_best follows early_stopping.monitor too, so it also needs a validation set for val_*.
void check_early_stopping(const Checker& check, const EarlyStoppingConfig& e, bool save_best,
                          double val_split) {
  check.one_of("early_stopping.monitor", e.monitor,
               {"val_loss", "val_acc", "test_loss", "test_acc", "train_loss"});
  check.one_of("early_stopping.mode", e.mode, {"auto", "min", "max"});
  check.at_least("early_stopping.patience", e.patience, 1);
  if (!(e.min_delta >= 0)) {
    check.fail("early_stopping.min_delta", "must be >= 0", "0 counts any improvement");
  }
  if (e.monitor.rfind("val_", 0) != 0 || val_split > 0) return;
  if (e.enabled) {
    // Named after whichever of the two keys the user wrote.
    check.fail(
        check.given("early_stopping.monitor") ? "early_stopping.monitor" : "early_stopping.enabled",
        "monitoring \"" + e.monitor + "\" needs a validation set, but data.val_split is 0",
        "hold some training data out with data.val_split (such as 0.1), or monitor "
        "test_loss, test_acc or train_loss");
  }
  if (save_best) {
    check.fail("checkpoint.save_best",
               "best.pt follows early_stopping.monitor, \"" + e.monitor +
                   "\", which needs a validation set, but data.val_split is 0",
               "hold some training data out with data.val_split (such as 0.1), or set "
               "early_stopping.monitor to test_loss, test_acc or train_loss");
  }
}

Config from_tree(const json& j, const KeySources& sources,
                 const std::vector<std::string>& model_names) {
  const Checker check(sources);
  Config c;
  c.name = j.at("name").get<std::string>();
  c.seed = j.at("seed").get<int64_t>();
  const json& d = j.at("data");
  c.data.dataset = d.at("dataset").get<std::string>();
  c.data.dir = d.at("dir").get<std::string>();
  c.data.batch_size = d.at("batch_size").get<int64_t>();
  c.data.drop_last = d.at("drop_last").get<bool>();
  c.data.placement = d.at("placement").get<std::string>();
  c.data.num_workers = d.at("num_workers").get<int64_t>();
  c.data.prefetch_batches = d.at("prefetch_batches").get<int64_t>();
  c.data.pin_memory = d.at("pin_memory").get<bool>();
  c.data.val_split = d.at("val_split").get<double>();
  const json& m = j.at("model");
  c.model.name = m.at("name").get<std::string>();
  c.model.init_std = m.at("init_std").get<double>();
  const json& o = j.at("optimizer");
  c.optimizer.name = o.at("name").get<std::string>();
  c.optimizer.lr = o.at("lr").get<double>();
  c.optimizer.momentum = o.at("momentum").get<double>();
  c.optimizer.weight_decay = o.at("weight_decay").get<double>();
  c.optimizer.grad_clip_norm = o.at("grad_clip_norm").get<double>();
  const json& t = j.at("train");
  c.train.epochs = t.at("epochs").get<int64_t>();
  c.train.limit_train_batches = t.at("limit_train_batches").get<int64_t>();
  c.train.limit_eval_batches = t.at("limit_eval_batches").get<int64_t>();
  const json& p = j.at("parallel");
  c.parallel.backend = p.at("backend").get<std::string>();
  c.parallel.devices = p.at("devices").get<std::vector<std::string>>();
  c.parallel.output_device = p.at("output_device").get<std::string>();
  c.parallel.dist_backend = p.at("dist_backend").get<std::string>();
  c.parallel.bucket_mb = p.at("bucket_mb").get<double>();
  c.parallel.timeout_s = p.at("timeout_s").get<double>();
  const json& e = j.at("early_stopping");
  c.early_stopping.enabled = e.at("enabled").get<bool>();
  c.early_stopping.monitor = e.at("monitor").get<std::string>();
  c.early_stopping.mode = e.at("mode").get<std::string>();
  c.early_stopping.patience = e.at("patience").get<int64_t>();
  c.early_stopping.min_delta = e.at("min_delta").get<double>();
  c.early_stopping.restore_best = e.at("restore_best").get<bool>();
  c.early_stopping.stop_on_non_finite = e.at("stop_on_non_finite").get<bool>();
  const json& k = j.at("checkpoint");
  c.checkpoint.dir = k.at("dir").get<std::string>();
  c.checkpoint.every_epochs = k.at("every_epochs").get<int64_t>();
  c.checkpoint.keep_last = k.at("keep_last").get<int64_t>();
  c.checkpoint.save_best = k.at("save_best").get<bool>();
  c.precision = j.at("precision").get<std::string>();
  c.runtime.threads = j.at("runtime").at("threads").get<int64_t>();
  c.log.level = j.at("log").at("level").get<std::string>();
  c.log.every_steps = j.at("log").at("every_steps").get<int64_t>();

  if (c.name.empty() || c.name.find('/') != std::string::npos) {
    check.fail("name", "must be a non-empty name without '/'", "it names the folder runs/<name>/");
  }
  check.one_of("data.dataset", c.data.dataset, {"fashion-mnist", "mnist"});
  check.at_least("data.batch_size", c.data.batch_size, 1);
  check.one_of("data.placement", c.data.placement, {"auto", "host", "device"});
  check.at_least("data.num_workers", c.data.num_workers, 0);
  check.at_most("data.num_workers", c.data.num_workers, kMaxWorkers);
  check.at_least("data.prefetch_batches", c.data.prefetch_batches, 0);
  check.at_most("data.prefetch_batches", c.data.prefetch_batches, kMaxPrefetch);
  if (!(c.data.val_split >= 0 && c.data.val_split < 1)) {
    check.fail("data.val_split", "must be in [0, 1)",
               "0 holds nothing out; 0.1 holds out a tenth of the training set for validation");
  }
  check.one_of("model.name", c.model.name, model_names);
  if (!(c.model.init_std > 0)) check.fail("model.init_std", "must be > 0", "d2l uses 0.01");
  check.one_of("optimizer.name", c.optimizer.name, {"sgd"});
  if (!(c.optimizer.lr > 0)) check.fail("optimizer.lr", "must be > 0", "d2l uses 0.2");
  if (!(c.optimizer.momentum >= 0 && c.optimizer.momentum < 1)) {
    check.fail("optimizer.momentum", "must be in [0, 1)", "0 is plain SGD, 0.9 is usual");
  }
  if (!(c.optimizer.weight_decay >= 0)) {
    check.fail("optimizer.weight_decay", "must be >= 0", "0 disables weight decay");
  }
  check.at_least("train.epochs", c.train.epochs, 1);
  check.at_least("train.limit_train_batches", c.train.limit_train_batches, 0);
  check.at_least("train.limit_eval_batches", c.train.limit_eval_batches, 0);
  check.one_of("parallel.backend", c.parallel.backend, {"single", "dp", "ddp"});
  check_devices(check, c.parallel);
  check.one_of("parallel.dist_backend", c.parallel.dist_backend, {"auto", "nccl", "gloo"});
  if (!(c.parallel.bucket_mb > 0)) {
    check.fail("parallel.bucket_mb", "must be > 0", "DDP's default is 25 (MB)");
  }
  if (!(c.parallel.timeout_s > 0)) {
    check.fail("parallel.timeout_s", "must be > 0", "the default is 600 (seconds)");
  }
  check_early_stopping(check, c.early_stopping, c.checkpoint.save_best, c.data.val_split);
  check.at_least("checkpoint.every_epochs", c.checkpoint.every_epochs, 0);
  check.at_least("checkpoint.keep_last", c.checkpoint.keep_last, 0);
  if (!(c.optimizer.grad_clip_norm >= 0)) {
    check.fail("optimizer.grad_clip_norm", "must be >= 0", "0 turns clipping off; 1.0 is usual");
  }
  check.one_of("precision", c.precision, {"fp32", "fp16", "bf16"});
  check.at_least("runtime.threads", c.runtime.threads, 0);
  check.one_of("log.level", c.log.level, {"trace", "debug", "info", "warn", "error", "off"});
  check.at_least("log.every_steps", c.log.every_steps, 0);
  return c;
}

}  // namespace

Config resolve_config(const std::optional<std::string>& json_text, const std::string& source,
                      const std::vector<std::string>& overrides,
                      const std::vector<std::string>& model_names) {
  json tree = to_json(Config{});
  KeySources sources;
  if (json_text) merge_checked(tree, parse_json_text(*json_text, source), source, sources);
  for (const auto& text : overrides) apply_override(tree, text, sources);
  return from_tree(tree, sources, model_names);
}

Config load_config(const std::optional<std::filesystem::path>& file,
                   const std::vector<std::string>& overrides,
                   const std::vector<std::string>& model_names) {
  if (!file) return resolve_config(std::nullopt, "defaults", overrides, model_names);
  if (!std::filesystem::is_regular_file(*file)) {
    throw Error(ErrorCode::kConfig, file->string() + ": no such experiment file",
                "see configs/ for examples, or leave out --config for d2l's default experiment");
  }
  return resolve_config(core::read_text_file(*file), file->string(), overrides, model_names);
}

}  // namespace dptrain::config
