// Which experiment a command runs: its --config (or the defaults), or for evaluate and predict
// the model file's own run, with the command's --set, -q and -v over it.
#include <system_error>

#include "app/commands.h"
#include "config/json_text.h"
#include "config/load.h"
#include "core/error.h"
#include "core/fs.h"
#include "model/registry.h"
#include "model/state_dict.h"
#include "run/checkpoint_format.h"

namespace dptrain::app {
namespace {

// --set, then -q or -v: the flags win, as they are the later, more specific words.
std::vector<std::string> overrides_of(const cli::Command& command) {
  std::vector<std::string> overrides = command.overrides;
  if (command.verbosity == cli::Verbosity::kQuiet) overrides.push_back("log.level=warn");
  if (command.verbosity == cli::Verbosity::kVerbose) overrides.push_back("log.level=debug");
  return overrides;
}

// A run's experiment as this machine evaluates it: the model, data, seed and precision are the
// run's; where and how to compute (parallel.*, runtime.*), how to load the data (the batch size,
// workers, prefetching, placement) and what to log (log.*) are this command's, the defaults: a run
// trained on two GPUs is evaluated on what is here, and a config.json beside a model can make
// evaluate neither launch ranks nor take a batch of 10,000 images at once. Text that is no JSON
// object is passed on as it is, for the resolver to name what is wrong.
std::string experiment_here(const std::string& run_text) {
  try {
    nlohmann::json tree = config::parse_json(run_text);
    if (!tree.is_object()) return run_text;
    for (const char* section : {"parallel", "runtime", "log"}) tree.erase(section);
    if (auto data = tree.find("data"); data != tree.end() && data->is_object()) {
      for (const char* key :
           {"batch_size", "placement", "num_workers", "prefetch_batches", "pin_memory"}) {
        data->erase(key);
      }
    }
    return tree.dump();
  } catch (const nlohmann::json::exception&) {
    return run_text;
  }
}

config::Config resolve_run_experiment(const cli::Command& command, const std::string& run_text,
                                      const std::string& source) {
  return config::resolve_config(experiment_here(run_text), source, overrides_of(command),
                                model::model_names());
}

// What the model file itself records of its run's experiment (a checkpoint's config, model.pt's
// record), as JSON text; nothing when it records none.
std::optional<std::string> recorded_experiment(const std::filesystem::path& model) {
  if (auto text = run::checkpoint_config_text(model)) return text;
  return model::state_dict_experiment(model);
}

}  // namespace

config::Config resolve(const cli::Command& command) {
  return config::load_config(command.config_file, overrides_of(command), model::model_names());
}

config::Config resolve_for_model(const cli::Command& command, std::string& source) {
  const std::filesystem::path& model = command.model_file;
  if (command.config_file) {
    source = command.config_file->string() + " (--config)";
    config::Config config = resolve(command);
    // The model was made for the data its file records: an experiment file that leaves the
    // classes, channels or size to the data takes them from there, so that other data is refused.
    if (const auto text = recorded_experiment(model)) {
      const config::Config recorded = resolve_run_experiment(command, *text, model.string());
      config::DataConfig& d = config.data;
      if (d.classes.empty()) d.classes = recorded.data.classes;
      if (d.channels == 0) d.channels = recorded.data.channels;
      if (d.image_size.empty()) d.image_size = recorded.data.image_size;
    }
    return config;
  }
  if (const auto text = run::checkpoint_config_text(model)) {
    source = "the checkpoint's own";
    return resolve_run_experiment(command, *text, model.string() + " (its config)");
  }
  // The run's config.json first (a person may have edited it: data.dir on this machine), then
  // model.pt's own record, for a model file that travels alone.
  const std::filesystem::path beside = model.parent_path() / "config.json";
  std::error_code ec;
  if (std::filesystem::is_regular_file(beside, ec)) {
    source = beside.string() + " (beside the model)";
    return resolve_run_experiment(command, core::read_text_file(beside), beside.string());
  }
  if (const auto text = model::state_dict_experiment(model)) {
    source = "the model file's own";
    return resolve_run_experiment(command, *text, model.string() + " (its experiment)");
  }
  source =
      "the defaults (no config.json beside the model, none in it; give the run's with "
      "--config)";
  return config::resolve_config(std::nullopt, "defaults", overrides_of(command),
                                model::model_names());
}

void check_model_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw core::Error(core::ErrorCode::kIo, path.string() + ": no such model file",
                      "give a run's model.pt or one of its checkpoints (runs/<name>/<time>/"
                      "model.pt, checkpoints/epoch-NNNN.pt)");
  }
  const core::ReadOnlyFile readable(path);  // a folder or an unreadable file: refused here
}

}  // namespace dptrain::app
