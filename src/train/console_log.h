// The console's share of a run's records: the step log line (every rank, through the logger,
// which shows other ranks' only when asked) and rank 0's epoch line on stdout.
#pragma once

#include <ostream>

#include "run/run_log.h"
#include "train/live_progress.h"

namespace dptrain::train {

class ConsoleLog : public run::RunLog {
 public:
  // `epoch_lines`: rank 0, not quietened; `epochs`: train.epochs, for "epoch 3/10".
  ConsoleLog(std::ostream& console, LiveProgress& live, bool epoch_lines, int64_t epochs)
      : console_(console), live_(live), epoch_lines_(epoch_lines), epochs_(epochs) {}
  void step(const run::StepRecord& r) override;
  void epoch(const run::EpochMetrics& m) override;

 private:
  std::ostream& console_;
  LiveProgress& live_;
  const bool epoch_lines_;
  const int64_t epochs_;
};

}  // namespace dptrain::train
