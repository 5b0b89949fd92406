#include "train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "model/archive_check.h"
#include "parallel/zero_optimizer.h"
#include "train/parameters.h"

namespace dptrain::train {
namespace {

using core::Error;
using core::ErrorCode;
using nlohmann::json;

constexpr int kFormat = 2;  // 2: "partial" holds TrainingSums

// Settings that may change between a run and its resumption without changing what it computes.
bool may_differ(const std::string& key) {
  for (const char* prefix : {"/train/epochs", "/log/", "/runtime/", "/checkpoint/",
                             "/data/num_workers", "/data/prefetch_batches", "/data/pin_memory",
                             "/data/placement", "/data/dir", "/parallel/timeout_s"}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> shapes_of(const std::vector<torch::Tensor>& tensors) {
  std::vector<std::string> shapes;
  for (const auto& t : tensors) {
    std::ostringstream s;
    s << t.sizes();
    shapes.push_back(s.str());
  }
  return shapes;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

void write_tensors(torch::serialize::OutputArchive& archive, const std::string& prefix,
                   const std::vector<torch::Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    archive.write(prefix + std::to_string(i), tensors[i].detach().cpu());
  }
}

std::vector<torch::Tensor> read_tensors(torch::serialize::InputArchive& archive,
                                        const std::string& prefix, size_t count) {
  std::vector<torch::Tensor> tensors(count);
  for (size_t i = 0; i < count; ++i) archive.read(prefix + std::to_string(i), tensors[i]);
  return tensors;
}

// The refusal of a checkpoint whose model is not the one the config builds.
void check_model(const std::filesystem::path& path, const json& meta, const config::Config& config,
                 const std::vector<torch::Tensor>& params) {
  const std::string model = meta.at("model").get<std::string>();
  const auto saved = meta.at("shapes").get<std::vector<std::string>>();
  const auto built = shapes_of(params);
  if (model == config.model.name && saved == built) return;
  throw Error(ErrorCode::kConfig,
              path.string() + ": the checkpoint holds model \"" + model + "\" with parameters " +
                  joined(saved) + ", but the config builds \"" + config.model.name + "\" with " +
                  joined(built),
              "resume with the experiment that wrote it (its config is in the checkpoint's "
              "run folder, config.json), or start a new run without --resume");
}

void warn_about_changes(const std::filesystem::path& path, const json& saved,
                        const config::Config& config) {
  const json now = config::to_json(config).flatten();
  const json then = saved.flatten();
  for (const auto& [key, value] : then.items()) {
    if (may_differ(key)) continue;
    const auto it = now.find(key);
    if (it == now.end() || *it != value) {
      spdlog::warn(
          "resuming {}: {} was {} and is now {}; the run will not match an "
          "uninterrupted one",
          path.string(), key, value.dump(), it == now.end() ? "absent" : it->dump());
    }
  }
}

// The epoch and preemption checkpoints in `dir`, oldest first (by finished epochs, then steps).
std::vector<std::filesystem::path> checkpoints_in_order(const std::filesystem::path& dir) {
  static const std::regex kName(R"(epoch-(\d{4,})(?:-step-(\d{6,}))?\.pt)");
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, kName)) continue;
    const int64_t steps = m[2].matched ? std::stoll(m[2]) : 0;
    found.push_back({{std::stoll(m[1]), steps}, entry.path()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> paths;
  for (const auto& f : found) paths.push_back(f.second);
  return paths;
}

}  // namespace

std::string checkpoint_name(int64_t finished_epochs, int64_t steps_done) {
  char name[64];
  if (steps_done == 0) {
    std::snprintf(name, sizeof name, "epoch-%04lld.pt", static_cast<long long>(finished_epochs));
  } else {
    std::snprintf(name, sizeof name, "epoch-%04lld-step-%06lld.pt",
                  static_cast<long long>(finished_epochs), static_cast<long long>(steps_done));
  }
  return name;
}

void write_checkpoint(const std::filesystem::path& path, const config::Config& config,
                      const Progress& progress, parallel::Backend& backend,
                      const torch::optim::Optimizer& optimizer) {
  const std::vector<torch::Tensor> params = backend.parameters();
  json epochs = json::array();
  for (const auto& m : progress.epochs) epochs.push_back(to_json(m));
  const json meta = {
      {"format", kFormat},
      {"model", config.model.name},
      {"shapes", shapes_of(params)},
      {"config", config::to_json(config)},
      {"epoch", progress.epoch},
      {"steps_done", progress.steps_done},
      {"global_step", progress.global_step},
      {"partial", to_json(progress.partial)},
      {"epochs", epochs},
      {"early_stopping",
       {{"best_epoch", progress.early_stopping.best_epoch},
        {"best", progress.early_stopping.best},
        {"without_improvement", progress.early_stopping.without_improvement}}},
      {"scaler", {{"scale", progress.scaler.scale}, {"clean_steps", progress.scaler.clean_steps}}},
      {"parameters", params.size()},
      {"best_weights", progress.best_weights.size()},
  };
  torch::serialize::OutputArchive archive;
  archive.write("meta", c10::IValue(meta.dump()));
  write_tensors(archive, "param_", params);
  write_tensors(archive, "best_", progress.best_weights);
  archive.write("cpu_rng", at::detail::getDefaultCPUGenerator().get_state());
  torch::serialize::OutputArchive optimizer_state;
  optimizer.save(optimizer_state);
  archive.write("optimizer", optimizer_state);
  std::ostringstream bytes;
  archive.save_to(bytes);
  std::filesystem::create_directories(path.parent_path());
  core::write_file_atomic(path, bytes.str());
}

namespace {

// The record's progress fields (the best weights are tensors, read apart); json errors when a
// field is missing or of another type.
Progress progress_of(const json& meta) {
  Progress p;
  p.epoch = meta.at("epoch").get<int64_t>();
  p.steps_done = meta.at("steps_done").get<int64_t>();
  p.partial = training_sums_from_json(meta.at("partial"));
  for (const auto& m : meta.at("epochs")) p.epochs.push_back(epoch_metrics_from_json(m));
  // Checkpoints from before gradient accumulation took one optimizer step per batch.
  int64_t batches = p.steps_done;
  for (const auto& m : p.epochs) batches += m.steps;
  p.global_step = meta.value("global_step", batches);
  const json& es = meta.at("early_stopping");
  p.early_stopping = {es.at("best_epoch").get<int64_t>(), es.at("best").get<double>(),
                      es.at("without_improvement").get<int64_t>()};
  meta.at("best_weights").get<size_t>();  // checked here, used when the tensors are read
  p.scaler = {meta.at("scaler").at("scale").get<double>(),
              meta.at("scaler").at("clean_steps").get<int64_t>()};
  return p;
}

// Tensors that do not have the parameters' shapes (where the record said they would) are damage.
void check_shapes(const std::vector<torch::Tensor>& values,
                  const std::vector<torch::Tensor>& params) {
  if (values.size() != params.size()) throw std::runtime_error("a wrong number of tensors");
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].defined() || values[i].sizes() != params[i].sizes()) {
      throw std::runtime_error("tensor " + std::to_string(i) +
                               " does not have its parameter's "
                               "shape " +
                               shapes_of({params[i]})[0]);
    }
  }
}

// Opens a checkpoint's archive and reads its record; an I/O error naming the file when it is no
// checkpoint.
json open_checkpoint(const std::filesystem::path& path, torch::serialize::InputArchive& archive) {
  json meta;
  try {
    const std::string bytes = core::read_text_file(path);
    model::check_archive(bytes);
    std::istringstream in(bytes);
    archive.load_from(in);
    c10::IValue text;
    archive.read("meta", text);
    meta = json::parse(text.toStringRef());
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo,
                path.string() + ": not a readable dptrain checkpoint: " + core::message_of(e),
                "give a file from a run's checkpoints folder, or --resume auto");
  }
  if (meta.value("format", 0) != kFormat) {
    throw Error(ErrorCode::kIo,
                path.string() + ": checkpoint format " + std::to_string(meta.value("format", 0)) +
                    ", this dptrain reads " + std::to_string(kFormat),
                "resume it with the dptrain version that wrote it");
  }
  return meta;
}

}  // namespace

CheckpointWeights read_checkpoint_weights(const std::filesystem::path& path) {
  torch::serialize::InputArchive archive;
  const json meta = open_checkpoint(path, archive);
  CheckpointWeights weights;
  try {
    weights.model = meta.at("model").get<std::string>();
    weights.parameters = read_tensors(archive, "param_", meta.at("shapes").size());
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo, path.string() + ": a damaged checkpoint: " + core::message_of(e),
                "give another checkpoint from the run's checkpoints folder");
  }
  return weights;
}

Progress read_checkpoint(const std::filesystem::path& path, const config::Config& config,
                         parallel::Backend& backend, torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive archive;
  const json meta = open_checkpoint(path, archive);
  const std::vector<torch::Tensor> params = backend.parameters();
  Progress p;
  try {  // the whole record is read before anything is loaded, so a damaged one changes nothing
    check_model(path, meta, config, params);
    warn_about_changes(path, meta.at("config"), config);
    p = progress_of(meta);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kIo, path.string() + ": a damaged checkpoint record: " + e.what(),
                "give another checkpoint from the run's checkpoints folder");
  }

  std::vector<torch::Tensor> values;
  try {  // the tensors too, and the optimizer's state is loaded before the parameters change
    values = read_tensors(archive, "param_", params.size());
    p.best_weights = read_tensors(archive, "best_", meta.at("best_weights").get<size_t>());
    check_shapes(values, params);
    if (!p.best_weights.empty()) check_shapes(p.best_weights, params);
    torch::serialize::InputArchive optimizer_state;
    archive.read("optimizer", optimizer_state);
    optimizer.load(optimizer_state);
    torch::Tensor rng;
    archive.read("cpu_rng", rng);
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle on the global one
    const std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo, path.string() + ": a damaged checkpoint: " + core::message_of(e),
                "give another checkpoint from the run's checkpoints folder");
  }
  copy_into_parameters(backend, values);
  return p;
}

std::filesystem::path checkpoint_dir(const config::Config& config,
                                     const std::filesystem::path& output_dir) {
  return config.checkpoint.dir.empty() ? output_dir / "checkpoints"
                                       : std::filesystem::path(config.checkpoint.dir);
}

Checkpointer::Checkpointer(const config::Config& config, std::filesystem::path dir, bool writer)
    : config_(config), dir_(std::move(dir)), writer_(writer) {}

std::filesystem::path Checkpointer::save(const std::string& name, const Progress& progress,
                                         parallel::Backend& backend,
                                         torch::optim::Optimizer& optimizer) {
  const std::filesystem::path path = dir_ / name;
  // A ZeRO rank holds a shard of the optimizer's state: every rank sends its shard first.
  if (auto* zero = dynamic_cast<parallel::ZeroOptimizer*>(&optimizer)) zero->consolidate();
  if (writer_) write_checkpoint(path, config_, progress, backend, optimizer);
  return path;
}

void Checkpointer::within_epoch(int64_t epoch, int64_t steps_done, int64_t global_step,
                                const std::function<Progress()>& progress,
                                parallel::Backend& backend, torch::optim::Optimizer& optimizer) {
  const int64_t every = config_.checkpoint.every_steps;
  if (every <= 0 || global_step % every != 0) return;
  save(checkpoint_name(epoch, steps_done), progress(), backend, optimizer);
  if (writer_) prune_checkpoints(dir_, config_.checkpoint.keep_last);
}

void Checkpointer::after_epoch(int64_t epoch, bool improved, bool last, const Progress& progress,
                               parallel::Backend& backend, torch::optim::Optimizer& optimizer) {
  const int64_t every = config_.checkpoint.every_epochs;
  // A step checkpoint due at the epoch's last step is this one, whatever every_epochs says.
  const int64_t every_steps = config_.checkpoint.every_steps;
  const bool step_due = every_steps > 0 && progress.global_step % every_steps == 0;
  if ((every > 0 && (epoch % every == 0 || epoch == config_.train.epochs || last)) || step_due) {
    save(checkpoint_name(epoch, 0), progress, backend, optimizer);
    if (writer_) prune_checkpoints(dir_, config_.checkpoint.keep_last);
  }
  if (config_.checkpoint.save_best && improved) save("best.pt", progress, backend, optimizer);
}

std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir) {
  const auto found = checkpoints_in_order(dir);
  if (found.empty()) return std::nullopt;
  return found.back();
}

void prune_checkpoints(const std::filesystem::path& dir, int64_t keep) {
  if (keep <= 0) return;
  const auto found = checkpoints_in_order(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) {
    std::filesystem::remove(found[i]);
  }
}

}  // namespace dptrain::train
