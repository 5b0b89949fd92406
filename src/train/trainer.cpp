#include "train/trainer.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "core/fs.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "core/torch_compat.h"
#include "data/locate.h"
#include "model/registry.h"
#include "parallel/devices.h"
#include "parallel/factory.h"
#include "train/evaluate.h"
#include "train/report.h"

namespace dptrain::train {
namespace {

namespace F = torch::nn::functional;

void apply_runtime(const config::RuntimeConfig& runtime) {
  const int threads = runtime.threads > 0 ? static_cast<int>(runtime.threads)
                                          : static_cast<int>(std::thread::hardware_concurrency());
  torch::set_num_threads(std::max(1, threads));
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const config::OptimizerConfig& c,
                                                        std::vector<torch::Tensor> params) {
  // config validation admits "sgd" alone for now.
  return std::make_unique<torch::optim::SGD>(
      std::move(params),
      torch::optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
}

struct Session {
  std::unique_ptr<parallel::Backend> backend;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<data::Loader> train_loader;
  std::unique_ptr<data::Loader> test_loader;
};

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

data::LoaderOptions loader_options(const config::Config& config, data::Placement placement) {
  data::LoaderOptions o;
  o.batch_size = config.data.batch_size;
  o.drop_last = config.data.drop_last;
  o.limit_batches = config.train.limit_train_batches;
  o.placement = placement;
  o.num_workers = config.data.num_workers;
  o.prefetch_batches = config.data.prefetch_batches;
  o.pin_memory = config.data.pin_memory;
  return o;
}

Session build_session(const config::Config& config) {
  // The backend first: a device that is not there fails before the data set is read.
  torch::manual_seed(static_cast<uint64_t>(config.seed));  // the initial weights
  Session s;
  s.backend = parallel::make_backend(config.parallel, model::make_model(config.model));
  s.optimizer = make_optimizer(config.optimizer, s.backend->parameters());
  const torch::Device device = s.backend->input_device();

  const std::filesystem::path data_dir =
      data::locate_data_dir(config.data.dir, config.data.dataset);
  const data::Splits splits = data::load_splits(data_dir);
  const data::Placement placement = data::resolve_placement(config.data.placement, device);
  spdlog::info("data: {} from {}, placed on the {}{}", config.data.dataset, data_dir.string(),
               data::placement_name(placement),
               placement == data::Placement::kHost
                   ? fmt::format(" ({} workers)", config.data.num_workers)
                   : std::string());
  log_inert_loader_keys(config.data, placement, device);

  const data::LoaderOptions train_options = loader_options(config, placement);
  s.train_loader = data::make_loader(
      splits.train, std::make_shared<data::RandomSampler>(splits.train->size(), config.seed),
      train_options, device);
  data::LoaderOptions test_options = train_options;
  test_options.drop_last = false;
  test_options.limit_batches = config.train.limit_eval_batches;
  s.test_loader =
      data::make_loader(splits.test, std::make_shared<data::SequentialSampler>(splits.test->size()),
                        test_options, device);
  return s;
}

// One pass over the training set; returns the epoch's training figures.
EpochMetrics train_epoch(Session& s, int64_t epoch, int64_t log_every) {
  parallel::Backend& backend = *s.backend;
  const auto options = torch::TensorOptions().device(backend.input_device());
  torch::Tensor loss_sum = torch::zeros({}, options.dtype(torch::kFloat64));
  torch::Tensor correct = torch::zeros({}, options.dtype(torch::kInt64));
  EpochMetrics m;
  m.epoch = epoch + 1;
  const int64_t steps = s.train_loader->batches_per_epoch();

  backend.set_training(true);
  s.train_loader->start_epoch(epoch);
  core::Stopwatch timer;
  while (auto batch = s.train_loader->next()) {
    s.optimizer->zero_grad();
    const torch::Tensor logits = backend.forward(batch->images);
    const torch::Tensor loss = F::cross_entropy(logits, batch->labels);
    loss.backward();
    backend.synchronize_gradients();
    s.optimizer->step();

    torch::NoGradGuard no_grad;
    loss_sum += loss.detach().to(torch::kFloat64) * batch->size();
    correct += logits.argmax(1).eq(batch->labels).sum();
    m.train_samples += batch->size();
    ++m.steps;
    core::throw_if_interrupted("in epoch " + std::to_string(m.epoch) + " after step " +
                               std::to_string(m.steps) + " of " + std::to_string(steps));
    if (log_every > 0 && m.steps % log_every == 0) {
      spdlog::info("epoch {} step {}/{} loss {:.4f}", m.epoch, m.steps, steps, loss.item<double>());
    }
  }
  parallel::synchronize(backend.input_device());
  m.train_sec = timer.seconds();

  std::vector<double> totals = {loss_sum.item<double>(),
                                static_cast<double>(correct.item<int64_t>()),
                                static_cast<double>(m.train_samples)};
  backend.all_reduce_sum(totals);
  if (totals[2] > 0) {
    m.train_loss = totals[0] / totals[2];
    m.train_acc = totals[1] / totals[2];
  }
  m.train_samples = static_cast<int64_t>(totals[2]);
  return m;
}

}  // namespace

TrainResult train(const config::Config& config, const std::filesystem::path& output_dir,
                  std::ostream& console) {
  apply_runtime(config.runtime);
  Session s = build_session(config);
  const bool writer = s.backend->rank() == 0;
  if (writer) {
    core::write_file_atomic(output_dir / "config.json", config::to_json(config).dump(2) + "\n");
  }
  const std::string devices = parallel::format_devices(s.backend->devices());
  spdlog::info("training {} on {} ({} backend, {} threads), {} steps per epoch, output {}",
               config.model.name, devices, s.backend->name(), torch::get_num_threads(),
               s.train_loader->batches_per_epoch(), output_dir.string());

  MetricsFile metrics_file(output_dir / "metrics.jsonl");
  TrainResult result;
  for (int64_t epoch = 0; epoch < config.train.epochs; ++epoch) {
    EpochMetrics m = train_epoch(s, epoch, config.log.every_steps);
    core::Stopwatch eval_timer;
    const EvalResult eval = evaluate(*s.backend, *s.test_loader);
    m.eval_sec = eval_timer.seconds();
    m.test_loss = eval.loss;
    m.test_acc = eval.accuracy;
    result.epochs.push_back(m);
    if (writer) {
      console << format_epoch_line(m, config.train.epochs) << std::endl;
      metrics_file.append(m);
    }
  }

  result.summary = summarize(result.epochs);
  result.summary.backend = s.backend->name();
  for (const auto& d : s.backend->devices()) result.summary.devices.push_back(d.str());
  result.summary.world_size = s.backend->world_size();
  result.summary.precision = config.precision;
  result.summary.libtorch_version = core::compat::libtorch_version();
  if (writer) {
    core::write_file_atomic(output_dir / "summary.json", to_json(result.summary).dump(2) + "\n");
    console << format_summary_line(result.summary.test_acc, result.summary.sec_per_epoch, devices)
            << std::endl;
  }
  return result;
}

}  // namespace dptrain::train
