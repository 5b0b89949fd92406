#include "run/checkpoint_format.h"

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "config/json_text.h"
#include "config/schema.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/terminal.h"
#include "model/state_dict.h"
#include "optim/optimizer_state.h"
#include "serialize/torch_file.h"
#include "serialize/zip_reader.h"

namespace dptrain::run {
namespace {

using core::Error;
using core::ErrorCode;
using nlohmann::json;
using serialize::Value;
using serialize::ValuePtr;

// 4: a torch.save file; 3 was one whose record named its position otherwise (steps_done), so it
// is not resumed, though its parameters and config are read as 4's (evaluate, predict,
// --init-from); 1 and 2 were TorchScript archives.
constexpr int kFormat = 4;
constexpr int kOldestWeightsFormat = 3;
const char* const kFormatKey = "dptrain_checkpoint";

const char* const kDamagedHint = "give another checkpoint from the run's checkpoints folder";
const char* const kResumeHint = "give a file from a run's checkpoints folder, or --resume auto";

// Settings that may change between a run and its resumption without changing what it computes.
bool may_differ(const std::string& key) {
  for (const char* prefix : {"/train/epochs", "/log/", "/runtime/", "/checkpoint/",
                             "/data/num_workers", "/data/prefetch_batches", "/data/pin_memory",
                             "/data/placement", "/data/dir", "/parallel/timeout_s"}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string shape_of(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

std::vector<std::string> shapes_of(const std::vector<torch::Tensor>& tensors) {
  std::vector<std::string> shapes;
  for (const auto& t : tensors) shapes.push_back(shape_of(t));
  return shapes;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

ValuePtr tensor_list(const std::vector<torch::Tensor>& tensors) {
  std::vector<ValuePtr> items;
  for (const auto& t : tensors) items.push_back(serialize::tensor(t));
  return serialize::list(std::move(items));
}

std::vector<torch::Tensor> tensors_in(const Value& root, const std::string& key) {
  const Value& list = serialize::as(Value::Kind::kList, serialize::at(root, key, "the checkpoint"),
                                    "the checkpoint's " + key);
  std::vector<torch::Tensor> tensors;
  for (const auto& item : list.items) {
    tensors.push_back(serialize::as_tensor(*item, "an entry of the checkpoint's " + key));
  }
  return tensors;
}

// The buffers: none in a checkpoint written before models had any.
std::vector<torch::Tensor> buffers_in(const Value& root) {
  if (serialize::find(root, "buffers") == nullptr) return {};
  return tensors_in(root, "buffers");
}

// The refusal of a checkpoint whose model is not the one the config builds.
void check_model(const std::filesystem::path& path, const json& record,
                 const config::Config& config, const std::vector<torch::Tensor>& params) {
  const std::string model = record.at("model").get<std::string>();
  const auto saved = record.at("shapes").get<std::vector<std::string>>();
  const auto built = shapes_of(params);
  if (model == config.model.name && saved == built) return;
  throw Error(ErrorCode::kConfig,
              path.string() + ": the checkpoint holds model \"" + core::printable(model) +
                  "\" with parameters " + core::printable(joined(saved)) +
                  ", but the config builds \"" + config.model.name + "\" with " + joined(built),
              "resume with the experiment that wrote it (its config is in the checkpoint's "
              "run folder, config.json), or start a new run without --resume");
}

// The refusal of a checkpoint that another optimizer wrote: its state (momentum, Adam's moments)
// is that optimizer's, and no other can go on from it.
void check_optimizer(const std::filesystem::path& path, const json& saved,
                     const config::Config& config) {
  if (!saved.is_object()) {  // a json error: the caller names the record damaged
    throw json::type_error::create(302, "its config is no object", nullptr);
  }
  const std::string then = saved.at("optimizer").at("name").get<std::string>();
  const std::string now = config::name_of(config.optimizer.name);
  if (then == now) return;
  throw Error(ErrorCode::kConfig,
              path.string() + ": the checkpoint holds the state of optimizer \"" +
                  core::printable(then) + "\", and this run's optimizer.name is \"" + now + "\"",
              "resume with optimizer.name \"" + core::printable(then) +
                  "\" (its run's config.json), or start a new run from its weights with "
                  "--init-from");
}

// Each rank's intra-op thread count orders the float sums of every convolution and matrix
// product: another count gives other low bits, which training then carries on.
void warn_about_threads(const std::filesystem::path& path, const json& record) {
  const auto saved = record.find("threads");
  if (saved == record.end() || !saved->is_number_integer()) return;  // a record before they were
  const int64_t then = config::integer_at(record, "threads");
  const int now = torch::get_num_threads();
  if (then == now) return;
  spdlog::warn(
      "resuming {}: it was trained with {} thread(s) and this run has {}: sums then add up in "
      "another order, so from here the parameters will differ slightly from an uninterrupted "
      "run's (add --set runtime.threads={} to keep them equal)",
      path.string(), then, now, then);
}

void warn_about_changes(const std::filesystem::path& path, const json& saved,
                        const config::Config& config) {
  if (!saved.is_object()) {  // a json error: the caller names the record damaged
    throw json::type_error::create(302, "its config is no object", nullptr);
  }
  // A setting a line, up to a screenful: a record may hold any number of keys.
  constexpr int kMostShown = 20;
  const json now = config::to_json(config).flatten();
  const json then = saved.flatten();
  int differ = 0;
  for (const auto& [key, value] : then.items()) {
    if (may_differ(key)) continue;
    const auto it = now.find(key);
    if ((it == now.end() || *it != value) && ++differ <= kMostShown) {
      spdlog::warn(
          "resuming {}: {} was {} and is now {}; the run will not match an "
          "uninterrupted one",
          path.string(), config::key_path_of(key), value.dump(),
          it == now.end() ? "absent" : it->dump());
    }
  }
  if (differ > kMostShown) {
    spdlog::warn("resuming {}: {} more settings differ", path.string(), differ - kMostShown);
  }
  // More epochs change nothing a step computes, but cosine and onecycle lay their shape over the
  // whole run: from the resumed step on, the rate follows the longer (or shorter) curve.
  const auto epochs_then = then.find("/train/epochs");
  const bool shaped = config.scheduler.name == config::SchedulerName::kCosine ||
                      config.scheduler.name == config::SchedulerName::kOnecycle;
  if (shaped && epochs_then != then.end() && *epochs_then != config.train.epochs) {
    spdlog::warn(
        "resuming {}: train.epochs was {} and is now {}, and the {} schedule spans the whole run: "
        "the learning rate follows the new length from here, not the curve it began on (resume "
        "with train.epochs {} to keep it)",
        path.string(), epochs_then->dump(), config.train.epochs,
        config::name_of(config.scheduler.name), epochs_then->dump());
  }
}

// The record's fields of the resume point (the best weights are tensors, read apart); json errors
// when a field is missing or of another type.
ResumePoint resume_point_of(const json& record) {
  ResumePoint p;
  p.run_id = record.at("run_id").get<std::string>();
  p.epoch = config::integer_at(record, "epoch");
  p.batches_done = config::integer_at(record, "batches_done");
  p.global_step = config::integer_at(record, "global_step");
  p.partial = epoch_tally_from_json(record.at("partial"));
  for (const auto& m : record.at("epochs")) p.epochs.push_back(epoch_metrics_from_json(m));
  const json& es = record.at("early_stopping");
  p.early_stopping = {config::integer_at(es, "best_epoch"), es.at("best").get<double>(),
                      config::integer_at(es, "without_improvement")};
  p.scaler = {record.at("scaler").at("scale").get<double>(),
              config::integer_at(record.at("scaler"), "clean_steps")};
  // Written since folders of pictures were read; IDX data sets record none.
  if (const auto d = record.find("data_listing"); d != record.end())
    p.data_listing = d->get<std::string>();
  return p;
}

// The largest count a record may hold: ranks sum their counts as doubles, which hold every
// integer up to 2^53 exactly, and a larger one would overflow (undefined behaviour) where a
// resumed run adds to it or casts its sum back.
constexpr int64_t kMaxCount = int64_t{1} << 53;

// What no run writes: a position before the start, epochs that do not match it, a best epoch
// that is none of them, counts no run reaches, a loss scale no step gives. Each would make the
// resumed run loop, index past its records, overflow or compute garbage. (Where the position lies
// within an epoch is checked by the trainer, which knows the epoch's length.)
void check_resume_point(const ResumePoint& p) {
  const auto refuse = [](const std::string& what) {
    throw json::type_error::create(302, what, nullptr);
  };
  const auto count = [&](const std::string& name, int64_t value) {
    if (value < 0 || value > kMaxCount) {
      refuse(name + " is " + std::to_string(value) + ", a count no run reaches");
    }
  };
  count("epoch", p.epoch);
  count("batches_done", p.batches_done);
  count("global_step", p.global_step);
  if (static_cast<size_t>(p.epoch) != p.epochs.size()) {
    refuse("it is at epoch " + std::to_string(p.epoch) + " but holds " +
           std::to_string(p.epochs.size()) + " finished epochs");
  }
  for (size_t i = 0; i < p.epochs.size(); ++i) {
    const EpochMetrics& m = p.epochs[i];
    const std::string at = "epochs[" + std::to_string(i) + "].";
    for (const auto& [name, value] : {std::pair{"epoch", m.epoch},
                                      {"train_samples", m.train_samples},
                                      {"batches", m.batches},
                                      {"test_samples", m.test_samples},
                                      {"test_correct", m.test_correct},
                                      {"global_step", m.global_step},
                                      {"skipped_steps", m.skipped_steps}}) {
      count(at + name, value);
    }
  }
  const EarlyStoppingState& es = p.early_stopping;
  if (es.best_epoch < 0 || es.best_epoch > p.epoch) {
    refuse("early_stopping.best_epoch is " + std::to_string(es.best_epoch) + " of " +
           std::to_string(p.epoch) + " epochs");
  }
  count("early_stopping.without_improvement", es.without_improvement);
  if (es.without_improvement > p.epoch) {
    refuse("early_stopping.without_improvement counts " + std::to_string(es.without_improvement) +
           " evaluations in " + std::to_string(p.epoch) + " epochs");
  }
  const EpochTally& t = p.partial;
  count("partial.samples", t.samples);
  count("partial.correct", t.correct);
  count("partial.skipped_steps", t.skipped_steps);
  // (The loss sum may be nan or inf: a diverging epoch's is.)
  if (t.correct > t.samples || !std::isfinite(t.train_sec)) {
    refuse("partial: its sums of the epoch under way are no counts");
  }
  count("scaler.clean_steps", p.scaler.clean_steps);
  if (!std::isfinite(p.scaler.scale) || p.scaler.scale < 0) {
    refuse("scaler.scale is no number a loss scaler reaches");
  }
}

// Tensors that do not have the model's shapes are damage.
void check_shapes(const std::vector<torch::Tensor>& values,
                  const std::vector<torch::Tensor>& params, const std::string& what,
                  const std::string& noun = "parameter") {
  if (values.size() != params.size()) {
    throw std::runtime_error(what + ": " + std::to_string(values.size()) + " tensors for " +
                             std::to_string(params.size()) + " " + noun + "s");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].sizes() != params[i].sizes()) {
      throw std::runtime_error(what + ": tensor " + std::to_string(i) + " has shape " +
                               shape_of(values[i]) + ", its " + noun + " " + shape_of(params[i]));
    }
  }
}

// Where a CPU generator's state (ATen's CPUGeneratorImplState, whose legacy part is TH's
// THGeneratorState, laid out alike in LibTorch 1.13 and 2.x) keeps its Mersenne Twister's
// position: `left` (an int at byte 8) draws until it regenerates its 624 words, whether it was
// `seeded` (an int at byte 12), and the word `next` (a uint64 at byte 16) to read next. LibTorch
// checks each on its own, not whether they agree.
constexpr size_t kLeftAt = 8;
constexpr size_t kSeededAt = 12;
constexpr size_t kNextAt = 16;
constexpr int64_t kMersenneWords = 624;

// Whether a draw from this position stays within the 624 words: each one before the regeneration
// reads word `next` and moves on, so next + left - 2 must be a word (left = 1, next = 0 is a fresh
// seed's; left + next = 625 any later one's).
bool mersenne_position_valid(const torch::Tensor& state) {
  int32_t left = 0, seeded = 0;
  uint64_t next = 0;
  std::memcpy(&left, state.data_ptr<uint8_t>() + kLeftAt, sizeof left);
  std::memcpy(&seeded, state.data_ptr<uint8_t>() + kSeededAt, sizeof seeded);
  std::memcpy(&next, state.data_ptr<uint8_t>() + kNextAt, sizeof next);
  return seeded == 1 && left >= 1 && left <= kMersenneWords &&
         next <= static_cast<uint64_t>(kMersenneWords + 1 - left);
}

// The CPU generator's state, checked to be one the generator takes and can draw from.
torch::Tensor generator_state(const Value& root) {
  const torch::Tensor& rng = serialize::as_tensor(serialize::at(root, "cpu_rng", "the checkpoint"),
                                                  "the checkpoint's cpu_rng");
  const torch::Tensor now = at::detail::getDefaultCPUGenerator().get_state();
  if (rng.scalar_type() != torch::kByte || rng.sizes() != now.sizes()) {
    throw std::runtime_error("the checkpoint's cpu_rng is no CPU generator state");
  }
  torch::Tensor state = rng.contiguous().clone();
  if (!mersenne_position_valid(state)) {
    throw std::runtime_error(
        "the checkpoint's cpu_rng is at a position its generator cannot draw from");
  }
  // Whatever else LibTorch refuses in a state, refused here, before anything has been applied.
  at::detail::createCPUGenerator().set_state(state);
  return state;
}

// A decoded checkpoint: the torch.save file's object and its JSON record.
struct Opened {
  ValuePtr root;
  json record;
};

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what,
                         const std::string& hint) {
  throw Error(ErrorCode::kIo, path.string() + ": not a readable dptrain checkpoint: " + what, hint);
}

// The record of a decoded file that is a checkpoint of this format (or of `oldest` up to it);
// `path` names it in errors.
json record_of(const std::filesystem::path& path, const Value& root, int oldest = kFormat) {
  const Value* format = serialize::find(root, kFormatKey);
  if (format == nullptr) refuse(path, "a torch.save file without dptrain's record", kDamagedHint);
  if (format->kind != Value::Kind::kInt || format->integer < oldest || format->integer > kFormat) {
    refuse(path,
           "checkpoint format " +
               (format->kind == Value::Kind::kInt ? std::to_string(format->integer) : "?") +
               ", this dptrain reads " + std::to_string(kFormat),
           "resume it with the dptrain version that wrote it");
  }
  try {
    return config::parse_json(serialize::as_text(serialize::at(root, "record", "the checkpoint"),
                                                 "the checkpoint's record"));
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo,
                path.string() + ": a damaged checkpoint record: " + core::message_of(e),
                kDamagedHint);
  }
}

// Decodes `file`, building no more than `limits` allow.
Opened open_checkpoint(const std::filesystem::path& path, const core::ReadOnlyFile& file,
                       const serialize::DecodeLimits& limits) {
  Opened opened;
  try {
    opened.root = serialize::decode_torch_file(serialize::file_source(file), limits);
  } catch (const core::Error&) {
    throw;  // the file could not be read (it shrank meanwhile): its own message names it
  } catch (const serialize::CodeArchiveError& e) {
    refuse(path, e.what(),
           "dptrain no longer opens TorchScript archives, which is what checkpoints of format 1 "
           "and 2 were: finish such a run with the dptrain version that wrote it, or start from "
           "its model.pt (--init-from), which stays readable");
  } catch (const serialize::NotAnArchiveError& e) {
    throw Error(ErrorCode::kIo, path.string() + ": " + e.what(), kResumeHint);
  } catch (const std::exception& e) {
    refuse(path, core::message_of(e), kResumeHint);
  }
  opened.record = record_of(path, *opened.root);
  return opened;
}

// What reading a checkpoint's record alone may build: its storages are never read.
serialize::DecodeLimits record_only() {
  serialize::DecodeLimits limits;
  limits.read_storages = false;
  // Read before the model is known (it may name the model): as many objects as a checkpoint of
  // the largest model dptrain builds takes, some thousands for ResNet-18's, many times over.
  limits.objects = int64_t{1} << 16;
  return limits;
}

// The resume point in `file`'s record, read first and with no storage: a checkpoint of another
// model is named as such, not refused by the bounds this model sets on what the file may hold.
ResumePoint checked_resume_point(const std::filesystem::path& path, const core::ReadOnlyFile& file,
                                 const config::Config& config,
                                 const std::vector<torch::Tensor>& params) {
  const json record = open_checkpoint(path, file, record_only()).record;
  try {
    check_model(path, record, config, params);
    check_optimizer(path, record.at("config"), config);
    warn_about_changes(path, record.at("config"), config);
    warn_about_threads(path, record);
    ResumePoint point = resume_point_of(record);
    check_resume_point(point);
    return point;
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kIo,
                path.string() + ": a damaged checkpoint record: " + config::plain_json_error(e),
                kDamagedHint);
  }
}

}  // namespace

void write_checkpoint_file(const std::filesystem::path& path, const config::Config& config,
                           const CheckpointContents& contents) {
  const ResumePoint& point = contents.point;
  json epochs = json::array();
  for (const auto& m : point.epochs) epochs.push_back(to_json(m));
  const json record = {
      {"run_id", point.run_id},
      {"model", config.model.name},
      {"shapes", shapes_of(contents.parameters)},
      {"config", config::to_json(config)},
      {"epoch", point.epoch},
      {"batches_done", point.batches_done},
      {"global_step", point.global_step},
      {"partial", to_json(point.partial)},
      {"epochs", epochs},
      {"early_stopping",
       {{"best_epoch", point.early_stopping.best_epoch},
        {"best", point.early_stopping.best},
        {"without_improvement", point.early_stopping.without_improvement}}},
      {"scaler", {{"scale", point.scaler.scale}, {"clean_steps", point.scaler.clean_steps}}},
      {"threads", torch::get_num_threads()},
      {"data_listing", point.data_listing},
  };
  json full_record = record;
  // Each rank's row as a raw record of its own: read by that rank alone, after checking that the
  // record's size is what its settings keep; left unread by everything else.
  std::vector<serialize::RawRecord> rows;
  if (contents.rank_states.defined()) {
    full_record["rank_states"] = {{"ranks", contents.rank_states.size(0)},
                                  {"values", contents.rank_states.size(1)}};
    const torch::Tensor floats = contents.rank_states.to(torch::kFloat32).contiguous();
    for (int64_t r = 0; r < floats.size(0); ++r) {
      rows.push_back({rank_state_record(r), floats[r].contiguous()});
    }
  }
  const auto entry = [](const char* key, ValuePtr value) {
    return std::make_pair(serialize::text(key), std::move(value));
  };
  const ValuePtr root = serialize::dict({
      entry(kFormatKey, serialize::integer(kFormat)),
      entry("record", serialize::text(full_record.dump())),
      entry("parameters", tensor_list(contents.parameters)),
      entry("buffers", tensor_list(contents.buffers)),
      entry("best_weights", tensor_list(point.best_weights)),
      entry("optimizer", optim::state_value(config.optimizer.name, contents.optimizer)),
      entry("cpu_rng", serialize::tensor(contents.cpu_rng)),
  });
  core::write_file_atomic(path, serialize::encode_torch_file(*root, rows));
}

std::optional<std::string> checkpoint_config_text(const std::filesystem::path& path) {
  try {
    const core::ReadOnlyFile file(path);
    const ValuePtr root = serialize::decode_torch_file(serialize::file_source(file), record_only());
    if (serialize::find(*root, kFormatKey) == nullptr) return std::nullopt;
    return record_of(path, *root, kOldestWeightsFormat).at("config").dump();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<CheckpointWeights> checkpoint_weights(const std::filesystem::path& path,
                                                    const Value& root) {
  if (serialize::find(root, kFormatKey) == nullptr) return std::nullopt;
  const json record = record_of(path, root, kOldestWeightsFormat);
  CheckpointWeights weights;
  try {
    weights.model = record.at("model").get<std::string>();
    weights.state = tensors_in(root, "parameters");
    for (auto& b : buffers_in(root)) weights.state.push_back(std::move(b));
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo, path.string() + ": a damaged checkpoint: " + core::message_of(e),
                kDamagedHint);
  }
  return weights;
}

namespace {

// What `read` takes from the record of the checkpoint at `path` (read alone, no storage); an I/O
// error naming the file when a field is missing or of another type.
template <typename Read>
auto from_record(const std::filesystem::path& path, Read read) {
  const Opened opened = open_checkpoint(path, core::ReadOnlyFile(path), record_only());
  try {
    return read(opened.record);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kIo,
                path.string() + ": a damaged checkpoint record: " + config::plain_json_error(e),
                kDamagedHint);
  }
}

// Whether the run that wrote `saved` (its resolved config) kept local SGD's rank states rather
// than PowerSGD's.
bool wrote_local_sgd(const json& saved) {
  const auto parallel = saved.find("parallel");
  if (parallel == saved.end() || !parallel->is_object()) return false;
  const auto local = parallel->find("local_sgd");
  return local != parallel->end() && local->is_number_integer() && local->get<int64_t>() > 0;
}

// The refusal, as a config error, of rank states that this run's settings or rank count cannot
// take: `ranks` rows of `values` written under `saved`.
void check_rank_states_fit(const std::filesystem::path& path, int64_t ranks, int64_t values,
                           const json& saved, const config::Config& config,
                           const RankStateSpec& want, int64_t width) {
  const std::string keep =
      "resume with the parallel.local_sgd, parallel.grad_compression, parallel.powersgd_*, "
      "parallel.bucket_mb and optimizer settings that wrote it (its run's config.json)";
  if (wrote_local_sgd(saved) != (config.parallel.local_sgd > 0)) {
    throw Error(ErrorCode::kConfig,
                path.string() + ": the checkpoint holds each rank's " +
                    (wrote_local_sgd(saved) ? "local SGD" : "PowerSGD") +
                    " state, and this run uses " +
                    (config.parallel.local_sgd > 0 ? "local SGD" : "PowerSGD"),
                keep);
  }
  if (ranks != want.world) {
    throw Error(ErrorCode::kConfig,
                path.string() + ": the checkpoint holds the own state of " + std::to_string(ranks) +
                    " ranks (local SGD or PowerSGD), and this job has " +
                    std::to_string(want.world),
                "resume on " + std::to_string(ranks) + " ranks");
  }
  // PowerSGD's rows hold each bucket's error and each compressed matrix's Q: where the buckets
  // are cut and which matrices compress lay them out, even where the row's length stays the same.
  const auto parallel = saved.is_object() ? saved.find("parallel") : saved.end();
  if (!wrote_local_sgd(saved) && parallel != saved.end() && parallel->is_object()) {
    const json now = config::to_json(config).at("parallel");
    for (const char* key : {"bucket_mb", "powersgd_rank", "powersgd_min_compression"}) {
      const auto then = parallel->find(key);
      if (then == parallel->end() || *then == now.at(key)) continue;
      throw Error(ErrorCode::kConfig,
                  path.string() + ": parallel." + key + " was " + core::printable(then->dump()) +
                      " and is now " + now.at(key).dump() +
                      ": the checkpoint's PowerSGD state is laid out by it",
                  keep);
    }
  }
  if (values != width) {
    throw Error(ErrorCode::kConfig,
                path.string() + ": the checkpoint holds " + std::to_string(values) +
                    " values of each rank's own state, and this run's settings keep " +
                    std::to_string(width),
                keep);
  }
}

// This rank's row of the checkpoint's rank states (see write_checkpoint_file), in `dtype`:
// undefined where it holds none, or where this run keeps none (`width` 0: then said, and nothing
// of them is read). Every row's record must hold exactly `width` floats (checked before the row
// is allocated), this rank's finite values; the rest is damage.
torch::Tensor own_rank_state(const std::filesystem::path& path, const core::ReadOnlyFile& file,
                             const json& record, const config::Config& config,
                             const RankStateSpec& want, int64_t width, torch::ScalarType dtype) {
  const auto declared = record.find("rank_states");
  if (declared == record.end()) return {};  // the ranks agreed: each goes on from rank 0's
  if (width == 0) {
    spdlog::warn(
        "{}: the checkpoint holds each rank's own state (local SGD or PowerSGD), which this run "
        "does not use: every rank goes on from rank 0's",
        path.string());
    return {};
  }
  int64_t ranks = 0, values = 0;
  try {
    ranks = config::integer_at(*declared, "ranks");
    values = config::integer_at(*declared, "values");
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kIo,
                path.string() + ": a damaged checkpoint record: its rank_states: " +
                    config::plain_json_error(e),
                kDamagedHint);
  }
  if (ranks < 1 || values < 1) {
    throw Error(ErrorCode::kIo,
                path.string() + ": a damaged checkpoint record: rank_states of " +
                    std::to_string(ranks) + " ranks of " + std::to_string(values) + " values",
                kDamagedHint);
  }
  check_rank_states_fit(path, ranks, values, record.at("config"), config, want, width);
  torch::Tensor row;
  try {
    const serialize::ZipReader archive(serialize::file_source(file));
    // Every rank's record, from the directory alone: a damaged one is refused by every rank, not
    // by its own while the others go on into collectives.
    for (int64_t r = 0; r < ranks; ++r) {
      const std::string name = rank_state_record(r);
      if (archive.size_of(name) != static_cast<uint64_t>(width) * 4) {
        throw std::runtime_error("record " + name + " holds " +
                                 std::to_string(archive.size_of(name)) + " bytes, not " +
                                 std::to_string(width) + " floats");
      }
    }
    row = torch::empty({width}, torch::kFloat32);
    archive.read_record(rank_state_record(want.rank), static_cast<char*>(row.data_ptr()));
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo, path.string() + ": a damaged checkpoint: " + core::message_of(e),
                kDamagedHint);
  }
  if (!torch::isfinite(row).all().item<bool>()) {
    throw Error(ErrorCode::kIo,
                path.string() + ": rank " + std::to_string(want.rank) +
                    "'s own state in the checkpoint holds inf or nan",
                "the run had diverged, or the file is damaged: resume from an earlier checkpoint");
  }
  return row.to(dtype);
}

}  // namespace

std::string rank_state_record(int64_t rank) {
  return "rank_states/" + std::to_string(rank);
}

uint64_t rank_states_bound(const std::vector<model::StateSpec>& specs, int world) {
  // A row: the parameters and two optimizer tensors each (local SGD with Adam), or a bucket's
  // worth of error feedback and factors smaller than the matrices (PowerSGD), alignment included.
  uint64_t row = 64;
  for (const auto& spec : specs) {
    uint64_t numel = 1;
    for (const int64_t d : spec.shape) numel *= static_cast<uint64_t>(d);
    row += 3 * numel + 16;
  }
  const auto rows = static_cast<uint64_t>(std::max(world, kRankStateRowsAlways));
  return rows * (row * 4 + 4096);  // each row a record, with its header and padding
}

std::string checkpoint_run_id(const std::filesystem::path& path) {
  return from_record(path, [](const json& r) { return r.at("run_id").get<std::string>(); });
}

Position checkpoint_position(const std::filesystem::path& path) {
  return from_record(path, [](const json& r) {
    return std::make_pair(config::integer_at(r, "epoch"), config::integer_at(r, "batches_done"));
  });
}

CheckpointContents read_checkpoint_file(const std::filesystem::path& path,
                                        const std::shared_ptr<const core::ReadOnlyFile>& file,
                                        const config::Config& config,
                                        const std::vector<torch::Tensor>& parameters,
                                        const std::vector<torch::Tensor>& buffers,
                                        const RankStateSpec& ranks) {
  std::vector<torch::Tensor> state = parameters;  // the model's, in model.pt's order
  state.insert(state.end(), buffers.begin(), buffers.end());
  CheckpointContents contents;
  contents.point = checked_resume_point(path, *file, config, parameters);
  const Opened opened = open_checkpoint(path, *file, model::decode_limits(state));
  const Value& root = *opened.root;
  // Every tensor, and the optimizer's state, checked before the caller applies any of them.
  int64_t width = 0;  // of each rank's row of rank_states, for this run's settings
  try {
    contents.parameters = tensors_in(root, "parameters");
    check_shapes(contents.parameters, parameters, "its parameters");
    contents.buffers = buffers_in(root);
    check_shapes(contents.buffers, buffers, "its buffers", "buffer");
    const std::vector<torch::Tensor> best = tensors_in(root, "best_weights");
    if (!best.empty()) check_shapes(best, state, "its best weights", "model tensor");
    for (size_t i = 0; i < best.size(); ++i) {
      contents.point.best_weights.push_back(
          best[i].to(state[i].scalar_type()).contiguous().clone());
    }
    contents.optimizer = optim::parse_state(serialize::at(root, "optimizer", "the checkpoint"),
                                            config.optimizer.name, parameters);
    contents.cpu_rng = generator_state(root);
    width = ranks.numel ? ranks.numel(contents.optimizer) : 0;
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo, path.string() + ": a damaged checkpoint: " + core::message_of(e),
                kDamagedHint);
  }
  contents.own_rank_state = own_rank_state(path, *file, opened.record, config, ranks, width,
                                           parameters.front().scalar_type());
  return contents;
}

}  // namespace dptrain::run
