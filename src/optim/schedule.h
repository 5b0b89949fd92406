// The learning rate as a pure function of the optimizer step, so that a resumed run needs only its
// step count. The shapes are PyTorch's (StepLR, CosineAnnealingLR, OneCycleLR), stepped once per
// optimizer step, after a linear warm-up: step t < w takes lr * (t + 1) / w, reaching lr at the
// last warm-up step; the schedule then runs over the steps that remain. onecycle has a warm-up of
// its own, its rising phase: the warm-up sets that phase's length (PyTorch's pct_start = w / total,
// 0.3 when no warm-up is given), with PyTorch's other defaults and no momentum cycling.
#pragma once

#include <cstdint>

#include "config/config.h"

namespace dptrain::optim {

class LearningRateSchedule {
 public:
  // `total_steps`: the optimizer steps the run takes (epochs and max_steps both counted);
  // `steps_per_epoch`: optimizer steps per epoch, for scheduler.warmup_epochs. A config error,
  // naming the key, when the schedule does not fit in the run.
  LearningRateSchedule(const config::SchedulerConfig& config, double lr, int64_t total_steps,
                       int64_t steps_per_epoch);

  // The rate of optimizer step `step` (0-based).
  double at(int64_t step) const;
  int64_t warmup_steps() const { return warmup_; }

 private:
  double onecycle_at(int64_t step) const;
  // Where onecycle's rising phase ends, as a (fractional) step.
  double onecycle_rise_end() const;

  config::SchedulerConfig config_;
  double lr_;
  int64_t total_;
  int64_t warmup_;
};

}  // namespace dptrain::optim
