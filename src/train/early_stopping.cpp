#include "train/early_stopping.h"

#include <cmath>

#include "core/error.h"
#include "train/parameters.h"

namespace dptrain::train {
namespace {

std::string figure(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4f", value);
  return buffer;
}

}  // namespace

EarlyStopping::EarlyStopping(const config::EarlyStoppingConfig& config)
    : config_(config),
      maximize_(
          config.mode == config::MonitorMode::kMax ||
          (config.mode == config::MonitorMode::kAuto && config::is_accuracy(config.monitor))) {}

std::string EarlyStopping::monitor() const {
  return config::name_of(config_.monitor);
}

double EarlyStopping::watched(const run::EpochMetrics& m) const {
  using config::Monitor;
  if (config::needs_validation_set(config_.monitor) && !m.has_val) {
    throw core::Error(
        core::ErrorCode::kConfig,
        "early_stopping.monitor: \"" + monitor() + "\" but this run has no validation set",
        "set data.val_split, such as 0.1");
  }
  switch (config_.monitor) {
    case Monitor::kTrainLoss:
      return m.train_loss;
    case Monitor::kTestLoss:
      return m.test_loss;
    case Monitor::kTestAcc:
      return m.test_acc;
    case Monitor::kValLoss:
      return m.val_loss;
    case Monitor::kValAcc:
      return m.val_acc;
  }
  return m.test_loss;  // unreachable: every monitor is handled above
}

bool EarlyStopping::better(double value) const {
  if (best_epoch_ == 0) return true;
  return maximize_ ? value > best_ + config_.min_delta : value < best_ - config_.min_delta;
}

StopVerdict EarlyStopping::update(int64_t epoch, double value) {
  StopVerdict v;
  if (!std::isfinite(value)) {
    if (config_.stop_on_non_finite) {
      v.stop = true;
      v.reason = monitor() + " is " + (std::isnan(value) ? "nan" : "inf") + " at epoch " +
                 std::to_string(epoch);
      return v;
    }
  } else if (better(value)) {
    best_ = value;
    best_epoch_ = epoch;
    without_improvement_ = 0;
    v.improved = true;
    return v;
  }
  ++without_improvement_;
  if (without_improvement_ >= config_.patience) {
    v.stop = true;
    v.reason = monitor() + " did not improve on " +
               (best_epoch_ > 0 ? figure(best_) + " (epoch " + std::to_string(best_epoch_) + ")"
                                : std::string("a finite value")) +
               " for " + std::to_string(without_improvement_) + " evaluation" +
               (without_improvement_ > 1 ? "s" : "");
  }
  return v;
}

void EarlyStopping::restore(const State& state) {
  best_epoch_ = state.best_epoch;
  best_ = state.best;
  without_improvement_ = state.without_improvement;
}

EarlyStopWatch::EarlyStopWatch(const config::EarlyStoppingConfig& config, bool track_best)
    : enabled_(config.enabled), restore_best_(config.enabled && config.restore_best) {
  if (config.enabled || track_best) stopper_.emplace(config);
}

EarlyStopWatch::Verdict EarlyStopWatch::after_epoch(parallel::Backend& backend,
                                                    const run::EpochMetrics& m) {
  Verdict v;
  if (!stopper_) return v;
  const StopVerdict verdict = stopper_->update(m.epoch, stopper_->watched(m));
  v.improved = verdict.improved;
  if (verdict.improved && restore_best_) best_weights_ = host_copies(backend);
  if (!enabled_) return v;
  std::vector<double> votes = {verdict.stop ? 1.0 : 0.0};
  backend.all_reduce_sum(votes);
  if (votes[0] == 0) return v;
  reason_ = verdict.stop ? verdict.reason : "another rank stopped";
  v.stop = true;
  return v;
}

EarlyStopping::State EarlyStopWatch::state() const {
  return stopper_ ? stopper_->state() : EarlyStopping::State{};
}

void EarlyStopWatch::restore(const EarlyStopping::State& state,
                             std::vector<torch::Tensor> best_weights) {
  if (stopper_) stopper_->restore(state);
  // Without restore_best this run keeps no best weights up to date: carried on, the old ones
  // would be restored later, under a best epoch that is no longer theirs.
  if (restore_best_) best_weights_ = std::move(best_weights);
}

std::vector<std::string> EarlyStopWatch::finish(parallel::Backend& backend,
                                                const std::vector<run::EpochMetrics>& epochs,
                                                run::RunSummary& summary) {
  std::vector<std::string> lines;
  if (!enabled_ || epochs.empty()) return lines;
  summary.stopped_early = !reason_.empty();
  summary.stop_reason = reason_;
  summary.best_epoch = stopper_->best_epoch();
  summary.best_value = stopper_->best_value();
  if (summary.stopped_early) {
    lines.push_back("early stopping: " + reason_ + "; stopped after epoch " +
                    std::to_string(epochs.back().epoch));
  }
  const int64_t best = stopper_->best_epoch();
  if (restore_best_ && best > 0 && best != epochs.back().epoch && best_weights_.empty()) {
    // A run resumed with restore_best from a checkpoint written without it.
    lines.push_back("early stopping: epoch " + std::to_string(best) +
                    " was the best, but its weights were not kept (the run began without "
                    "early_stopping.restore_best): the final weights and figures are the last "
                    "epoch's");
    return lines;
  }
  if (restore_best_ && best > 0 && best != epochs.back().epoch) {
    copy_into_model(backend, best_weights_);
    // Evaluating the restored weights again would give these same figures.
    const run::EpochMetrics& m = epochs[static_cast<size_t>(best - 1)];
    summary.test_acc = m.test_acc;
    summary.test_loss = m.test_loss;
    summary.test_correct = m.test_correct;
    summary.test_samples = m.test_samples;
    summary.train_acc = m.train_acc;
    summary.train_loss = m.train_loss;
    summary.val_loss = m.val_loss;
    summary.val_acc = m.val_acc;
    lines.push_back("early stopping: restored the weights of epoch " + std::to_string(best) +
                    " (best " + stopper_->monitor() + " " + figure(stopper_->best_value()) +
                    "); the final figures are that epoch's");
  }
  return lines;
}

}  // namespace dptrain::train
