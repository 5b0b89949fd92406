#include "config/load.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>
#include <tuple>
#include <utility>

#include "config/checker.h"
#include "config/json_merge.h"
#include "config/json_text.h"
#include "config/schema.h"
#include "core/error.h"
#include "core/fs.h"

namespace dptrain::config {
namespace {

using core::Error;
using core::ErrorCode;
using nlohmann::json;

json parse_json_text(const std::string& text, const std::string& source) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw Error(ErrorCode::kConfig, source + ": the file is empty",
                "an experiment is a JSON object: {} takes every default, and `dptrain config "
                "--keys` lists the keys");
  }
  try {
    return parse_json(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    throw Error(ErrorCode::kConfig, source + ": not valid JSON: " + plain_json_error(e),
                "check commas, quotes and brackets near the position given");
  }
}

json parse_override_value(const std::string& text) {
  try {
    return parse_json(text);
  } catch (const json::exception&) {
    return text;  // a plain word such as cpu or fashion-mnist (or a number JSON cannot hold)
  }
}

void apply_override(json& tree, const std::string& text, KeySources& sources) {
  const std::string source = "--set " + text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(ErrorCode::kUsage, source + ": expected key.path=value",
                eq == 0 ? "for example --set train.epochs=2 or --set parallel.devices='[\"cpu\"]'"
                        : "use key=value: --set " + text + "=VALUE");
  }
  const json value = parse_override_value(text.substr(eq + 1));
  try {
    (void)value.dump();  // the config is written out as JSON, which holds UTF-8 text only
  } catch (const json::type_error&) {
    throw Error(ErrorCode::kConfig,
                "--set " + text.substr(0, eq) + "=...: the value is not valid UTF-8 text",
                "write the value in UTF-8");
  }
  set_checked(tree, text.substr(0, eq), value, source, sources);
}

void check_devices(const Checker& check, const ParallelConfig& p) {
  static const std::regex kDevice("auto|cpu|cuda(:[0-9]+)?");
  for (size_t i = 0; i < p.devices.size(); ++i) {
    if (!std::regex_match(p.devices[i], kDevice)) {
      check.fail("parallel.devices",
                 "entry " + std::to_string(i) + " \"" + p.devices[i] + "\" is not a device",
                 "use \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"");
    }
  }
  if (p.backend == Backend::kSingle && p.devices.size() != 1) {
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
  if (p.zero_stage > 0 && p.backend != Backend::kDdp) {
    check.fail("parallel.zero_stage",
               "shards over the ranks of the ddp backend, not \"" + name_of(p.backend) + "\"",
               "use parallel.backend \"ddp\", or zero_stage 0");
  }
  if (p.output_device.empty()) return;
  if (p.backend != Backend::kDp) {
    check.fail("parallel.output_device",
               "applies to the dp backend only, not \"" + name_of(p.backend) + "\"",
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
  if (!needs_validation_set(e.monitor) || val_split > 0) return;
  if (e.enabled) {
    // Named after whichever of the two keys the user wrote.
    check.fail(
        check.given("early_stopping.monitor") ? "early_stopping.monitor" : "early_stopping.enabled",
        "monitoring \"" + name_of(e.monitor) + "\" needs a validation set, but data.val_split is 0",
        "hold some training data out with data.val_split (such as 0.1), or monitor "
        "test_loss, test_acc or train_loss");
  }
  if (save_best) {
    check.fail("checkpoint.save_best",
               "best.pt follows early_stopping.monitor, \"" + name_of(e.monitor) +
                   "\", which needs a validation set, but data.val_split is 0",
               "hold some training data out with data.val_split (such as 0.1), or set "
               "early_stopping.monitor to test_loss, test_acc or train_loss");
  }
}

// Keys of one optimizer or schedule set away from their defaults while another is chosen: a
// mistake, not a no-op. (Their defaults pass: a run's config.json spells out every key.)
void check_optimizer(const Checker& check, const OptimizerConfig& o) {
  const OptimizerConfig defaults;
  const std::string chosen = "optimizer.name is \"" + name_of(o.name) + "\"";
  if (o.name == OptimizerName::kSgd) {
    const std::pair<const char*, bool> adam_keys[] = {
        {"optimizer.betas", o.betas != defaults.betas}, {"optimizer.eps", o.eps != defaults.eps}};
    for (const auto& [key, set] : adam_keys) {
      if (set) {
        check.fail(key, "applies to adam and adamw, but " + chosen,
                   "remove it, or set optimizer.name to adam or adamw");
      }
    }
  } else {
    const std::pair<const char*, bool> sgd_keys[] = {{"optimizer.momentum", o.momentum != 0},
                                                     {"optimizer.nesterov", o.nesterov}};
    for (const auto& [key, set] : sgd_keys) {
      if (set) {
        check.fail(key, "applies to sgd, but " + chosen,
                   "remove it (Adam's momentum is optimizer.betas), or use sgd");
      }
    }
  }
  if (o.nesterov && o.momentum <= 0) {
    check.fail("optimizer.nesterov",
               "Nesterov momentum needs a momentum, but optimizer.momentum is 0",
               "set optimizer.momentum (0.9 is usual), or nesterov false");
  }
}

void check_scheduler(const Checker& check, const SchedulerConfig& s) {
  const SchedulerConfig defaults;
  const std::string chosen = "scheduler.name is \"" + name_of(s.name) + "\"";
  const std::tuple<const char*, SchedulerName, bool> owned[] = {
      {"scheduler.step_size", SchedulerName::kStep, s.step_size != defaults.step_size},
      {"scheduler.gamma", SchedulerName::kStep, s.gamma != defaults.gamma},
      {"scheduler.min_lr", SchedulerName::kCosine, s.min_lr != defaults.min_lr}};
  for (const auto& [key, owner, set] : owned) {
    if (set && s.name != owner) {
      check.fail(key, "applies to scheduler \"" + name_of(owner) + "\", but " + chosen,
                 "remove it, or set scheduler.name to " + name_of(owner));
    }
  }
  if (s.warmup_steps > 0 && s.warmup_epochs > 0) {
    check.fail("scheduler.warmup_epochs", "and scheduler.warmup_steps are both set",
               "give the warm-up in steps or in epochs, not both");
  }
}

// Gradient compression and local SGD change how ddp's ranks exchange gradients: they need ddp,
// and each refuses what it cannot serve (ZeRO stage 2's reduce-scatter, sharded optimizer state,
// per-rank loss scaling), naming both keys.
void check_slow_link_settings(const Checker& check, const Config& c) {
  const ParallelConfig& p = c.parallel;
  const bool compressed = p.grad_compression != GradCompression::kNone;
  const char* key = compressed ? "parallel.grad_compression" : "parallel.local_sgd";
  if (!compressed && p.local_sgd == 0) return;
  if (p.backend != Backend::kDdp) {
    check.fail(key,
               "changes how ddp's ranks exchange gradients; parallel.backend is \"" +
                   name_of(p.backend) + "\", which has no ranks to exchange them",
               "use parallel.backend \"ddp\", or remove it");
  }
  if (compressed && p.local_sgd > 0) {
    check.fail("parallel.local_sgd",
               "and parallel.grad_compression \"" + name_of(p.grad_compression) +
                   "\" both set: local SGD sends parameters, not gradient buckets",
               "choose one: parallel.grad_compression \"none\", or parallel.local_sgd 0");
  }
  if (compressed && p.zero_stage == 2) {
    check.fail(key,
               "cannot compress parallel.zero_stage 2's gradients: they are reduce-scattered "
               "into shards, not all-reduced in buckets",
               "use parallel.zero_stage 1 (or 0) with compression");
  }
  if (p.local_sgd > 0 && p.zero_stage > 0) {
    check.fail(key,
               "keeps each rank's optimizer state whole and its own, which "
               "parallel.zero_stage " +
                   std::to_string(p.zero_stage) + " shards over the ranks",
               "use parallel.zero_stage 0 with local SGD");
  }
  if (p.grad_compression == GradCompression::kPowerSgd && c.precision == Precision::kFp16) {
    check.fail(key,
               "\"powersgd\" with precision \"fp16\": one overflowed step would leave inf in the "
               "error feedback and the warm-started factors of every step after it",
               "use precision \"bf16\" or \"fp32\" with PowerSGD, or grad_compression "
               "\"fp16\"");
  }
  if (p.local_sgd > 0 && c.precision == Precision::kFp16) {
    check.fail(key, "with precision \"fp16\": each rank would skip steps on its own loss scale",
               "use precision \"bf16\" or \"fp32\" with local SGD");
  }
}

void check_data(const Checker& check, const DataConfig& d) {
  if (d.channels == 2) {
    check.fail("data.channels", "is 2; pictures are converted to 1 channel (grey) or 3 (RGB)",
               "use 1, 3, or 0 for the data's own");
  }
  if (d.dataset != Dataset::kFolder && d.channels == 3) {
    check.fail("data.channels",
               "is 3, and \"" + name_of(d.dataset) + "\" is IDX files of grey pictures",
               "use 1 (or 0) with IDX data sets");
  }
  if (d.dataset == Dataset::kFolder && d.dir.empty()) {
    check.fail("data.dataset", "is \"folder\", and data.dir, the folder to read, is empty",
               "set data.dir to the folder holding train/<class>/... and test/<class>/...");
  }
}

// Every key through its declaration (type and range), then the checks that span several keys.
Config from_tree(const json& tree, const KeySources& sources,
                 const std::vector<std::string>& model_names) {
  const Checker check(sources, model_names);
  Config c;
  for (const auto& key : schema()) key.set(tree.at(key_pointer(key.path)), c, check);
  check_devices(check, c.parallel);
  check_slow_link_settings(check, c);
  if (c.model.sync_batchnorm && c.parallel.backend == Backend::kDp) {
    // As torch.nn.SyncBatchNorm, which works under DistributedDataParallel alone.
    check.fail("model.sync_batchnorm",
               "sums BatchNorm's statistics over the ranks of the ddp backend; dp keeps the "
               "first replica's, as torch.nn.DataParallel does",
               "use parallel.backend \"ddp\" (one rank per device), or sync_batchnorm false");
  }
  check_data(check, c.data);
  check_early_stopping(check, c.early_stopping, c.checkpoint.save_best, c.data.val_split);
  check_optimizer(check, c.optimizer);
  check_scheduler(check, c.scheduler);
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
  std::error_code ec;
  if (!std::filesystem::is_regular_file(*file, ec)) {
    const bool there = std::filesystem::exists(*file, ec);
    throw Error(ErrorCode::kConfig,
                file->string() + (there ? ": is no file" : ": no such experiment file"),
                "`ls configs/` lists the experiments that come with dptrain; leave out --config "
                "for d2l's default one");
  }
  return resolve_config(core::read_text_file(*file), file->string(), overrides, model_names);
}

}  // namespace dptrain::config
