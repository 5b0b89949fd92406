// Early stopping, as PyTorch Lightning's callback: one figure of each epoch is watched; a value
// better than the best by more than min_delta is an improvement; `patience` evaluations in a row
// without one, or a value that is nan or inf, end the run. The trainer keeps the best epoch's
// weights when asked to and makes every rank take the same decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "parallel/backend.h"
#include "run/metrics.h"
#include "run/resume_point.h"

namespace dptrain::train {

struct StopVerdict {
  bool improved = false;
  bool stop = false;
  std::string reason;  // why it stops, for the console and summary.json
};

class EarlyStopping {
 public:
  explicit EarlyStopping(const config::EarlyStoppingConfig& config);

  std::string monitor() const;  // its name, as the config spells it
  bool maximize() const { return maximize_; }
  // The watched figure of an epoch.
  double watched(const run::EpochMetrics& m) const;
  StopVerdict update(int64_t epoch, double value);

  int64_t best_epoch() const { return best_epoch_; }  // 0 until a finite value was seen
  double best_value() const { return best_; }

  // What a checkpoint keeps, to go on where it left off.
  using State = run::EarlyStoppingState;
  State state() const { return {best_epoch_, best_, without_improvement_}; }
  void restore(const State& state);

 private:
  bool better(double value) const;

  config::EarlyStoppingConfig config_;
  bool maximize_;
  int64_t best_epoch_ = 0;
  double best_ = 0;
  int64_t without_improvement_ = 0;
};

// Early stopping across a run's epoch loop: the verdicts, the best epoch's weights (a host copy,
// when they are to be restored), and what the summary says. It watches the figure when early
// stopping is enabled or checkpoint.save_best asks for the best epoch, and stops only when enabled.
class EarlyStopWatch {
 public:
  EarlyStopWatch(const config::EarlyStoppingConfig& config, bool track_best);

  struct Verdict {
    bool stop = false;      // every rank is to stop now
    bool improved = false;  // this epoch is the best so far
  };
  // After an epoch's evaluation. A collective under ddp, so that all ranks leave after the same
  // epoch (their figures are all-reduced and agree anyway, but no rank may be left waiting).
  Verdict after_epoch(parallel::Backend& backend, const run::EpochMetrics& m);

  // Fills the summary's early-stopping fields. With restore_best, puts the best epoch's weights
  // back into `backend` and makes that epoch's figures the summary's. Returns lines to print.
  std::vector<std::string> finish(parallel::Backend& backend,
                                  const std::vector<run::EpochMetrics>& epochs,
                                  run::RunSummary& summary);

  // For checkpoints: the watch's state and the best weights it holds (empty when none).
  EarlyStopping::State state() const;
  const std::vector<torch::Tensor>& best_weights() const { return best_weights_; }
  void restore(const EarlyStopping::State& state, std::vector<torch::Tensor> best_weights);

 private:
  std::optional<EarlyStopping> stopper_;
  bool enabled_;
  bool restore_best_;
  std::vector<torch::Tensor> best_weights_;
  std::string reason_;  // empty while running
};

}  // namespace dptrain::train
