#include "train/session.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <thread>

#include "build_features.h"
#include "core/error.h"
#include "core/terminal.h"
#include "data/crop_flip.h"
#include "data/sources.h"
#include "data/splits.h"
#include "model/registry.h"
#include "model/state_dict.h"
#include "optim/optimizer.h"
#include "parallel/backend.h"
#include "train/precision.h"
#include "train/rank_agreement.h"
#include "train/step.h"

namespace dptrain::train {

int64_t per_rank_batch(int64_t batch_size, int world_size) {
  if (batch_size % world_size != 0) {
    const int64_t below = batch_size / world_size * world_size;
    const std::string examples =
        below > 0 ? std::to_string(below) + " or " + std::to_string(below + world_size)
                  : std::to_string(world_size);
    throw core::Error(core::ErrorCode::kConfig,
                      "data.batch_size: " + std::to_string(batch_size) +
                          " does not split evenly over " + std::to_string(world_size) + " ranks",
                      "use a multiple of " + std::to_string(world_size) + ", such as " + examples);
  }
  return batch_size / world_size;
}

namespace {

// How many threads of this machine compute side by side: a thread per local ddp rank, and within
// a process a thread per dp replica on the CPU.
int cpu_compute_threads(const config::ParallelConfig& parallel, const launch::RankInfo& rank) {
  int per_process = 1;
  if (parallel.backend == config::Backend::kDp) {
    per_process = static_cast<int>(
        std::count(parallel.devices.begin(), parallel.devices.end(), std::string("cpu")));
  }
  return std::max(1, rank.local_world_size) * std::max(1, per_process);
}

// OMP_DYNAMIC=true lets GNU OpenMP give a parallel region fewer threads than it asked for when the
// machine is busy; oneDNN's kernels size their work for the threads they asked for and then wait
// at a barrier for ones that never come (seen: a LeNet step spinning for minutes). libgomp reads
// the variable case-blind, blanks around it allowed.
void refuse_dynamic_openmp() {
  const char* value = std::getenv("OMP_DYNAMIC");
  if (value == nullptr) return;
  std::string word;
  for (const char* c = value; *c != '\0'; ++c)
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  const auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  word.erase(word.begin(), std::find_if_not(word.begin(), word.end(), blank));
  word.erase(std::find_if_not(word.rbegin(), word.rend(), blank).base(), word.end());
  if (word != "true") return;
  throw core::Error(core::ErrorCode::kConfig,
                    "OMP_DYNAMIC=true: OpenMP may then give oneDNN's kernels fewer threads than "
                    "they wait for, and a step never ends",
                    "unset OMP_DYNAMIC (or set it to false); runtime.threads sets the threads");
}

// 0 threads: the machine's cores, shared out between the threads that compute at once (as
// torchrun's OMP_NUM_THREADS=1 default intends: ranks that each take every core slow each other).
void apply_runtime(const config::Config& config, const launch::RankInfo& rank) {
  refuse_dynamic_openmp();
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int threads = config.runtime.threads > 0
                          ? static_cast<int>(config.runtime.threads)
                          : cores / cpu_compute_threads(config.parallel, rank);
  torch::set_num_threads(std::max(1, threads));
  if (threads > 1 && !DPTRAIN_WITH_GNU_OPENMP) {
    spdlog::info(
        "dptrain's own CPU kernels (LeNet's first block, ReLU and pooling) run on one of the {} "
        "threads: this build has no GNU OpenMP (a GCC build uses them all)",
        threads);
  }
}

// The loader keys that do nothing with this placement and device, said once instead of ignored.
void log_inert_loader_keys(const config::DataConfig& c, data::Placement placement,
                           torch::Device device) {
  std::vector<std::string> inert;
  if (placement == data::Placement::kDevice) {
    if (c.num_workers > 0) inert.push_back("data.num_workers");
    if (c.prefetch_batches > 0) inert.push_back("data.prefetch_batches");
    if (c.pin_memory) inert.push_back("data.pin_memory");
  } else if (c.pin_memory && !device.is_cuda()) {
    inert.push_back("data.pin_memory");
  }
  for (const auto& key : inert) {
    spdlog::info("{} has no effect with data placement \"{}\" on {}", key,
                 data::placement_name(placement), device.str());
  }
}

data::LoaderOptions loader_options(const config::Config& config, data::Placement placement,
                                   int world_size) {
  data::LoaderOptions o;
  o.batch_size = per_rank_batch(config.data.batch_size, world_size);
  o.drop_last = config.data.drop_last;
  o.limit_batches = config.train.limit_train_batches;
  o.placement = placement;
  o.num_workers = config.data.num_workers;
  o.prefetch_batches = config.data.prefetch_batches;
  o.pin_memory = config.data.pin_memory;
  return o;
}

// A split kept on the device is transformed once, but random crops and flips are drawn there anew
// each epoch (data/crop_flip.h); other random training transforms need the host.
data::Placement placement_for(const config::Config& config, torch::Device device,
                              const data::TrainingSplits& splits) {
  const config::DataConfig& data = config.data;
  const data::Placement placement =
      data::resolve_placement(config::name_of(data.placement), device);
  if (placement == data::Placement::kDevice && data.placement == config::DataPlacement::kAuto &&
      data.dataset == config::Dataset::kFolder) {
    // Kept on the device, a folder's pictures would be decoded whole before training.
    spdlog::info("data: a folder of pictures: batches assembled on the host");
    return data::Placement::kHost;
  }
  if (placement != data::Placement::kDevice || !splits.random) return placement;
  std::string why;
  const auto plan =
      data::CropFlip::plan(data.train_transforms, config.seed, "data.train_transforms", &why);
  if (plan) why = plan->device_cost(splits.stored_shape, "data.train_transforms");
  if (why.empty()) return placement;
  if (data.placement == config::DataPlacement::kDevice) {
    throw core::Error(core::ErrorCode::kConfig, "data.placement \"device\": " + why,
                      "use data.placement \"host\" (or \"auto\") for these transforms");
  }
  spdlog::info("data: batches assembled on the host: {}", why);
  return data::Placement::kHost;
}

// The data set, split and placed, and a loader for each part: this rank's share of every set.
void attach_loaders(const config::Config& config, data::OpenedData opened, Session& s) {
  const torch::Device device = s.backend->input_device();
  const std::filesystem::path dir = opened.dir;
  const data::TrainingSplits splits = data::make_splits(config, opened);
  const std::shared_ptr<const data::Dataset>& val = splits.val;
  const data::Placement placement = placement_for(config, device, splits);
  spdlog::info("data: {} from {}, placed on the {}{}", config::name_of(config.data.dataset),
               core::printable(dir.string()), data::placement_name(placement),
               placement == data::Placement::kHost
                   ? fmt::format(" ({} workers)", config.data.num_workers)
                   : std::string());
  log_inert_loader_keys(config.data, placement, device);
  // Every rank shuffles with the same seed and takes its share of each global batch; world size 1
  // is just the case where that share is everything.
  const int world = s.backend->world_size();
  const int me = s.backend->rank();
  const data::LoaderOptions train_options = loader_options(config, placement, world);
  data::DistributedSampler::Options shards;
  shards.world_size = world;
  shards.rank = me;
  shards.seed = config.seed;
  // Cut to a multiple of the world size rather than padded with repeats, so that with drop_last
  // the ranks' batches together are exactly the single device's full batches.
  shards.drop_last = config.data.drop_last;
  s.train_loader = data::make_loader(
      splits.train, std::make_shared<data::DistributedSampler>(splits.train->size(), shards),
      train_options, device);
  data::LoaderOptions test_options = train_options;
  test_options.drop_last = false;
  test_options.limit_batches = config.train.limit_eval_batches;
  // Evaluation shards every set over the ranks; their counts are summed.
  auto eval_loader = [&](const std::shared_ptr<const data::Dataset>& split) {
    return data::make_loader(split, std::make_shared<data::ShardSampler>(split->size(), world, me),
                             test_options, device);
  };
  if (val) s.val_loader = eval_loader(val);
  s.test_loader = eval_loader(splits.test);
}

// The run's optimizer steps and the learning rate of each, once the epoch's batches are known.
void plan_steps(const config::Config& config, Session& s) {
  s.accumulate = config.train.accumulate_grad_batches;
  const int64_t per_epoch =
      optimizer_steps_per_epoch(s.train_loader->batches_per_epoch(), s.accumulate);
  s.total_steps = per_epoch * config.train.epochs;
  if (config.train.max_steps > 0) s.total_steps = std::min(s.total_steps, config.train.max_steps);
  s.schedule.emplace(config.scheduler, config.optimizer.lr, s.total_steps, per_epoch);
  const int64_t per_rank = per_rank_batch(config.data.batch_size, s.backend->world_size());
  const std::string split =
      s.accumulate == 1 ? fmt::format("{} per rank", per_rank)
                        : fmt::format("{} per rank and micro-batch, {} micro-batches accumulated",
                                      per_rank, s.accumulate);
  spdlog::info("optimizer {}: {} steps of {} samples ({}), schedule {}",
               config::name_of(config.optimizer.name), s.total_steps,
               config.data.batch_size * s.accumulate, split,
               config::name_of(config.scheduler.name));
}

// The data set opened, and the config with what it is.
data::OpenedData open_data_of(const config::Config& given, Session& s) {
  data::OpenedData data = data::open_data(given.data);
  // The model sees the samples as the transforms make them, in training and evaluation alike.
  const std::vector<int64_t> trained = data::model_sample_shape(given.data, data.sample_shape);
  data.sample_shape = trained;
  s.config = given;
  s.config.data = data::with_data_facts(given.data, data);
  s.data_listing = data.listing_digest;
  s.skipped_files = data.skipped.count;
  const config::DataConfig& d = s.config.data;
  if (given.data.dataset == config::Dataset::kFolder) {
    spdlog::info("data: {} training and {} test pictures of {} classes, {}x{} with {} channel{}",
                 data.train->size(), data.test->size(), d.classes.size(), d.image_size[1],
                 d.image_size[0], d.channels, d.channels == 1 ? "" : "s");
  }
  return data;
}

// What data.on_bad_file "skip" left out, said once (by rank 0: every rank finds the same).
void log_skipped(const data::SkippedFiles& skipped) {
  if (skipped.count > 0) {
    std::string examples;
    for (const auto& e : skipped.examples) examples += "\n  " + e;
    spdlog::warn("data.on_bad_file skip: {} picture{} left out{}{}", skipped.count,
                 skipped.count == 1 ? "" : "s", examples,
                 skipped.count > static_cast<int64_t>(skipped.examples.size()) ? "\n  ..." : "");
  }
  if (!skipped.empty_classes.empty()) {
    spdlog::warn("data.on_bad_file skip: {} {} no picture that reads: kept as {} with no samples",
                 fmt::format("\"{}\"", fmt::join(skipped.empty_classes, "\", \"")),
                 skipped.empty_classes.size() == 1 ? "has" : "have",
                 skipped.empty_classes.size() == 1 ? "a class" : "classes");
  }
}

}  // namespace

Session build_session(const config::Config& given, const launch::RankInfo& rank, SessionUse use) {
  apply_runtime(given, rank);
  Session s;
  data::OpenedData data = open_data_of(given, s);
  if (rank.rank == 0) log_skipped(data.skipped);
  const config::Config& config = s.config;
  torch::manual_seed(static_cast<uint64_t>(config.seed));  // the initial weights
  s.config.model = model::model_config_for(config);        // what the model takes and gives
  torch::nn::AnyModule model = model::make_model(config.model);
  s.state_specs = model::state_specs(*model.ptr());
  s.backend =
      parallel::make_backend(config.parallel, std::move(model), rank, config.model.sync_batchnorm);
  if (use == SessionUse::kTrain) {
    s.optimizer = s.backend->make_optimizer(
        [optimizer = config.optimizer](std::vector<torch::Tensor> params) {
          return optim::make_optimizer(optimizer, std::move(params));
        });
  }
  check_precision_devices(config.precision, s.backend->devices());
  s.autocast = autocast_dtype(config.precision);
  s.scaler =
      GradScaler(GradScalerOptions{/*enabled=*/config.precision == config::Precision::kFp16});
  if (s.backend->shards_optimizer()) {
    s.scaler.agree_across_shards(
        [backend = s.backend.get()](double local) { return backend->sum_over_shards(local); });
  }
  s.grad_clip_norm = config.optimizer.grad_clip_norm;

  agree_on_experiment(*s.backend, s.config, data);
  data::load_data(data);  // the IDX files, once the backend (and a ddp job's rendezvous) is up
  attach_loaders(config, std::move(data), s);
  if (use == SessionUse::kTrain) plan_steps(config, s);
  return s;
}

}  // namespace dptrain::train
