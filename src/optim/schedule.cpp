#include "optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace dptrain::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;
// PyTorch's OneCycleLR defaults: it starts at lr / 25 and ends at that / 1e4.
constexpr double kOnecycleDivFactor = 25;
constexpr double kOnecycleFinalDivFactor = 1e4;
constexpr double kOnecyclePctStart = 0.3;

// From `start` at pct 0 to `end` at pct 1 along half a cosine (OneCycleLR's _annealing_cos).
double cosine_between(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
}

[[noreturn]] void does_not_fit(const std::string& key, const std::string& what) {
  throw core::Error(core::ErrorCode::kConfig, key + ": " + what,
                    "shorten the warm-up, or train for more steps (train.epochs, train.max_steps)");
}

}  // namespace

LearningRateSchedule::LearningRateSchedule(const config::SchedulerConfig& config, double lr,
                                           int64_t total_steps, int64_t steps_per_epoch)
    : config_(config), lr_(lr), total_(total_steps) {
  warmup_ = config.warmup_epochs > 0 ? config.warmup_epochs * steps_per_epoch : config.warmup_steps;
  const std::string key =
      config.warmup_epochs > 0 ? "scheduler.warmup_epochs" : "scheduler.warmup_steps";
  const std::string run = " in a run of " + std::to_string(total_) + " optimizer steps";
  if (config.name == config::SchedulerName::kCosine && warmup_ >= total_) {
    does_not_fit(key, std::to_string(warmup_) + " warm-up steps leave none to anneal" + run);
  }
  // A warm-up that takes the whole run ends (if it ends at all) with the run: `step` would never
  // take its first step at lr, and `none` would never train at lr.
  if ((config.name == config::SchedulerName::kStep ||
       config.name == config::SchedulerName::kNone) &&
      warmup_ > 0 && warmup_ >= total_) {
    does_not_fit(key,
                 std::to_string(warmup_) + " warm-up steps leave no step at the full rate" + run);
  }
  if (config.name == config::SchedulerName::kOnecycle) {
    // Both phases need a step beyond their first: PyTorch divides by their lengths.
    const double rise = onecycle_rise_end();
    if (!(rise > 0 && rise < static_cast<double>(total_ - 1))) {
      does_not_fit(warmup_ > 0 ? key : "scheduler.name",
                   "onecycle's rising phase of " + std::to_string(warmup_ > 0 ? warmup_ : 0) +
                       " steps leaves a phase without steps" + run);
    }
  }
}

double LearningRateSchedule::onecycle_rise_end() const {
  // Computed as PyTorch does, float(pct_start * total_steps) - 1, for the same rounding.
  const double pct_start =
      warmup_ > 0 ? static_cast<double>(warmup_) / static_cast<double>(total_) : kOnecyclePctStart;
  return pct_start * static_cast<double>(total_) - 1;
}

double LearningRateSchedule::onecycle_at(int64_t step) const {
  const double initial = lr_ / kOnecycleDivFactor;
  const double t = static_cast<double>(std::min(step, total_ - 1));
  const double rise_end = onecycle_rise_end();
  if (t <= rise_end) return cosine_between(initial, lr_, t / rise_end);
  const double fall_end = static_cast<double>(total_ - 1);
  return cosine_between(lr_, initial / kOnecycleFinalDivFactor,
                        (t - rise_end) / (fall_end - rise_end));
}

double LearningRateSchedule::at(int64_t step) const {
  if (config_.name == config::SchedulerName::kOnecycle) return onecycle_at(step);
  if (step < warmup_) {
    return lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_);
  }
  const int64_t t = step - warmup_;
  switch (config_.name) {
    case config::SchedulerName::kStep:
      return lr_ * std::pow(config_.gamma, static_cast<double>(t / config_.step_size));
    case config::SchedulerName::kCosine: {
      const double span = static_cast<double>(total_ - warmup_);
      const double pct = std::min(static_cast<double>(t), span) / span;
      return config_.min_lr + (lr_ - config_.min_lr) * (1 + std::cos(kPi * pct)) / 2;
    }
    case config::SchedulerName::kNone:
    case config::SchedulerName::kOnecycle:
      break;
  }
  return lr_;
}

}  // namespace dptrain::optim
