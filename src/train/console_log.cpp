#include "train/console_log.h"

#include <spdlog/spdlog.h>

#include "train/report.h"

namespace dptrain::train {

void ConsoleLog::step(const run::StepRecord& r) {
  live_.clear();  // the log goes to the same terminal, on stderr
  spdlog::info("epoch {} batch {}/{} (step {}) loss {:.4f} lr {:.4g}", r.epoch, r.batch, r.batches,
               r.global_step, r.loss, r.lr);
}

void ConsoleLog::epoch(const run::EpochMetrics& m) {
  if (epoch_lines_) console_ << format_epoch_line(m, epochs_) << std::endl;
}

}  // namespace dptrain::train
