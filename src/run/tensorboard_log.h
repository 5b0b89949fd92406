// The run's TensorBoard event file, <run>/events.out.tfevents.<time>.<host>.<pid>, written by
// rank 0: every log.every_steps optimizer steps the training loss and learning rate, per epoch
// the train, val and test figures, speed, communication wait and each rank's memory, and the
// resolved config as text and as the HParams view's settings. No HParams session end is
// written: TensorBoard keeps the first it reads, so a finished run resumed for more epochs would
// need its file rewritten (a running TensorBoard then reads on in the old one) to shed it. Records
// are appended as they come, so that TensorBoard follows a running job. A resumed run keeps its
// file, rebuilt to its checkpoint: the records past it (which it trains again) and a torn last
// record are cut off first, so that no step appears twice, and the epochs the checkpoint holds are
// there once each.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/fs.h"
#include "run/run_log.h"

namespace dptrain::run {

// Where a run starts: what a resumed run's checkpoint holds (nothing for a new run).
struct LogStart {
  int64_t global_step = 0;           // optimizer steps already taken
  std::vector<EpochMetrics> epochs;  // epochs already finished
};

// The event files in `dir`, by name (the order TensorBoard reads them in).
std::vector<std::filesystem::path> event_files(const std::filesystem::path& dir);

class TensorBoardLog : public RunLog {
 public:
  // `config`: the resolved config, shown as text and as the HParams view's settings.
  TensorBoardLog(const std::filesystem::path& dir, const LogStart& start,
                 const nlohmann::json& config);
  void step(const StepRecord& r) override;
  void epoch(const EpochMetrics& m) override;
  const std::filesystem::path& path() const { return file_->path(); }

 private:
  void write_epoch(const EpochMetrics& m);
  std::optional<core::AppendFile> file_;
};

}  // namespace dptrain::run
