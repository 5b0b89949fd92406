#include "train/trainer.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "core/torch_compat.h"
#include "parallel/devices.h"
#include "train/checkpoint.h"
#include "train/early_stopping.h"
#include "train/evaluate.h"
#include "train/grad_scaler.h"
#include "train/parameters.h"
#include "train/precision.h"
#include "train/report.h"

namespace dptrain::train {

namespace {

namespace F = torch::nn::functional;

// ddp ranks vote on a preemption every this many steps: a vote is an all-reduce that waits for
// the device, too costly for every step on a GPU. Alone (single, dp) the flag is read every step.
constexpr int64_t kPreemptionPollSteps = 16;

// Whether a scheduler asked this job to stop (SIGTERM, SIGUSR1), decided together so that every
// rank stops after the same step.
bool all_want_to_preempt(parallel::Backend& backend) {
  std::vector<double> votes = {core::preemption_requested() ? 1.0 : 0.0};
  backend.all_reduce_sum(votes);
  return votes[0] > 0;
}

struct EpochOutcome {
  EpochMetrics m;          // finished: the epoch's figures; preempted: the sums so far
  bool preempted = false;  // stopped after m.steps steps for a preemption
};

// One pass over the training set, or the rest of one that a preemption cut short (`resume`).
EpochOutcome train_epoch(Session& s, int64_t epoch, int64_t log_every, const Progress* resume) {
  parallel::Backend& backend = *s.backend;
  const double waited_before = backend.communication_wait_seconds();
  const auto options = torch::TensorOptions().device(backend.input_device());
  torch::Tensor loss_sum = torch::zeros({}, options.dtype(torch::kFloat64));
  torch::Tensor correct = torch::zeros({}, options.dtype(torch::kInt64));
  EpochOutcome out;
  EpochMetrics& m = out.m;
  m.epoch = epoch + 1;
  double earlier_sec = 0;
  if (resume) {
    m.steps = resume->steps_done;
    m.skipped_steps = resume->partial.skipped_steps;  // the same on every rank
    earlier_sec = resume->partial.train_sec;
    // The checkpoint holds the sums over every rank; rank 0 carries them on alone.
    if (backend.rank() == 0) {
      loss_sum.fill_(resume->partial.train_loss);
      correct.fill_(static_cast<int64_t>(resume->partial.train_acc));
      m.train_samples = resume->partial.train_samples;
    }
  }
  const int64_t steps = s.train_loader->batches_per_epoch();

  backend.set_training(true);
  s.train_loader->start_epoch(epoch);
  for (int64_t k = 0; k < m.steps; ++k) s.train_loader->next();  // trained on before the stop
  core::Stopwatch timer;
  const std::vector<torch::Tensor> params = backend.parameters();
  while (auto batch = s.train_loader->next()) {
    // nanoGPT's order: zero, forward under autocast, scaled backward, the gradients complete
    // (all-reduced, or summed over the replicas), unscale, clip, step unless inf/nan, rescale.
    s.optimizer->zero_grad();
    torch::Tensor logits;
    torch::Tensor loss;
    {
      const AutocastScope autocast(backend.devices(), s.autocast);
      logits = backend.forward(batch->images);
      loss = F::cross_entropy(logits, batch->labels);
    }
    s.scaler.scale_loss(loss).backward();
    backend.synchronize_gradients();
    if (s.grad_clip_norm > 0) {
      s.scaler.unscale(params);
      torch::nn::utils::clip_grad_norm_(params, s.grad_clip_norm);
    }
    if (!s.scaler.step(*s.optimizer, params)) ++m.skipped_steps;
    s.scaler.update();

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
    if ((backend.world_size() == 1 || m.steps % kPreemptionPollSteps == 0) &&
        all_want_to_preempt(backend)) {
      out.preempted = true;
      break;
    }
  }
  parallel::synchronize(backend.input_device());
  m.train_sec = earlier_sec + timer.seconds();
  m.comm_wait_sec = backend.communication_wait_seconds() - waited_before;
  if (s.scaler.enabled()) m.loss_scale = s.scaler.scale();

  std::vector<double> totals = {loss_sum.item<double>(),
                                static_cast<double>(correct.item<int64_t>()),
                                static_cast<double>(m.train_samples)};
  backend.all_reduce_sum(totals);
  m.train_samples = static_cast<int64_t>(totals[2]);
  if (out.preempted) {  // sums, for the checkpoint
    m.train_loss = totals[0];
    m.train_acc = totals[1];
  } else if (totals[2] > 0) {
    m.train_loss = totals[0] / totals[2];
    m.train_acc = totals[1] / totals[2];
  }
  return out;
}

// The validation (when held out) and test figures of the parameters as they are now.
void evaluate_epoch(Session& s, EpochMetrics& m) {
  core::Stopwatch timer;
  const AutocastScope autocast(s.backend->devices(), s.autocast);
  if (s.val_loader) {
    const EvalResult val = evaluate(*s.backend, *s.val_loader);
    m.has_val = true;
    m.val_loss = val.loss;
    m.val_acc = val.accuracy;
  }
  const EvalResult test = evaluate(*s.backend, *s.test_loader);
  m.test_loss = test.loss;
  m.test_acc = test.accuracy;
  m.eval_sec = timer.seconds();
}

// The error that ends a preempted run: exit status 75, so that a batch script can requeue it.
core::Error preempted(const EpochMetrics& m, int64_t steps, const std::filesystem::path& path,
                      bool writer) {
  const std::string where = "in epoch " + std::to_string(m.epoch) + " after step " +
                            std::to_string(m.steps) + " of " + std::to_string(steps);
  return core::Error(
      core::ErrorCode::kPreempted,
      "stopped by " + core::preemption_signal_name() + " (a preemption notice) " + where + "; " +
          (writer ? "checkpoint written to " + path.string() : "rank 0 wrote the checkpoint"),
      "run the same command with --resume auto (or --resume " + path.string() +
          ") to go on from there");
}

// The final parameters, as torch::save writes a list of tensors (torch::load reads them back).
void save_parameters(parallel::Backend& backend, const std::filesystem::path& path) {
  std::ostringstream bytes;
  torch::save(host_copies(backend), bytes);
  core::write_file_atomic(path, bytes.str());
}

}  // namespace

TrainResult train(const config::Config& config, const std::filesystem::path& output_dir,
                  std::ostream& console, const dist::RankInfo& rank,
                  const std::optional<std::filesystem::path>& resume) {
  Session s = build_session(config, rank);
  const bool writer = s.backend->rank() == 0;
  if (writer) {
    core::write_file_atomic(output_dir / "config.json", config::to_json(config).dump(2) + "\n");
  }
  const std::string devices = parallel::format_devices(s.backend->devices());
  spdlog::info("training {} on {} ({} backend, {} threads), {} steps per epoch, output {}",
               config.model.name, devices, s.backend->name(), torch::get_num_threads(),
               s.train_loader->batches_per_epoch(), output_dir.string());

  TrainResult result;
  EarlyStopWatch watcher(config.early_stopping, config.checkpoint.save_best);
  Progress start;
  if (resume) {
    start = read_checkpoint(*resume, config, *s.backend, *s.optimizer);
    result.epochs = start.epochs;
    watcher.restore(start.early_stopping, start.best_weights);
    s.scaler.restore(start.scaler);
    spdlog::info("resumed from {}: epoch {}, step {}", resume->string(), start.epoch + 1,
                 start.steps_done);
  }
  std::optional<MetricsFile> metrics_file;
  if (writer) metrics_file.emplace(output_dir / "metrics.jsonl", result.epochs);
  Checkpointer checkpoints(config, checkpoint_dir(config, output_dir), writer);
  auto progress = [&](int64_t epoch, int64_t steps_done, const EpochMetrics& partial) {
    Progress p;
    p.epoch = epoch;
    p.steps_done = steps_done;
    p.partial = partial;
    p.epochs = result.epochs;
    p.early_stopping = watcher.state();
    p.best_weights = watcher.best_weights();
    p.scaler = s.scaler.state();
    return p;
  };

  for (int64_t epoch = start.epoch; epoch < config.train.epochs; ++epoch) {
    const bool rest_of_epoch = epoch == start.epoch && start.steps_done > 0;
    EpochOutcome outcome =
        train_epoch(s, epoch, config.log.every_steps, rest_of_epoch ? &start : nullptr);
    EpochMetrics& m = outcome.m;
    if (outcome.preempted) {
      const auto path = checkpoints.save(checkpoint_name(epoch, m.steps),
                                         progress(epoch, m.steps, m), *s.backend, *s.optimizer);
      // No rank exits before rank 0 has written it: a launcher may stop the rest when one exits
      // (srun --kill-on-bad-exit).
      std::vector<double> barrier = {0};
      s.backend->all_reduce_sum(barrier);
      throw preempted(m, s.train_loader->batches_per_epoch(), path, writer);
    }
    evaluate_epoch(s, m);
    result.epochs.push_back(m);
    if (writer) {
      console << format_epoch_line(m, config.train.epochs) << std::endl;
      metrics_file->append(m);
    }
    const EarlyStopWatch::Verdict verdict = watcher.after_epoch(*s.backend, m);
    checkpoints.after_epoch(m.epoch, verdict.improved, progress(epoch + 1, 0, EpochMetrics{}),
                            *s.backend, *s.optimizer);
    if (verdict.stop) break;
  }

  result.summary = summarize(result.epochs);
  for (const auto& line : watcher.finish(*s.backend, result.epochs, result.summary)) {
    if (writer) console << line << std::endl;
  }
  result.summary.backend = s.backend->name();
  for (const auto& d : s.backend->devices()) result.summary.devices.push_back(d.str());
  result.summary.world_size = s.backend->world_size();
  result.summary.precision = config.precision;
  result.summary.libtorch_version = core::compat::libtorch_version();
  if (writer) {
    save_parameters(*s.backend, output_dir / "model.pt");
    core::write_file_atomic(output_dir / "summary.json", to_json(result.summary).dump(2) + "\n");
    console << format_summary_line(result.summary.test_acc, result.summary.sec_per_epoch, devices)
            << std::endl;
  }
  return result;
}

}  // namespace dptrain::train
