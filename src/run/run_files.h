// Rank 0's writes into the run folder as a run goes: its first files once training can start
// (a start that fails before leaves the folder as it was), state.json at each change, and
// summary.json at the end. The metric sinks (run_log.h) write the per-epoch files; model.pt is the
// trainer's, under run/layout.h's name.
#pragma once

#include <filesystem>
#include <optional>

#include "config/config.h"
#include "run/metrics.h"
#include "run/origin.h"
#include "run/resume_point.h"
#include "run/state.h"

namespace dptrain::run {

class RunFiles {
 public:
  RunFiles(const std::filesystem::path& output_dir, const config::Config& config,
           const RunOrigin& origin);

  // Once training can start, from `resumed` (nothing: the beginning): what a killed run left
  // half-written goes; --overwrite's earlier run goes; a rewind that was killed while it set an
  // abandoned branch aside is finished, and a resume from an earlier checkpoint sets the
  // abandoned branch aside (run/branch.h); then run.json, state.json (running) and config.json.
  void begin(const std::optional<Position>& resumed);
  bool begun() const { return begun_; }

  // state.json is a report: failing to write it is a warning, never the end of the run. The error
  // that ended a run (a full disk, often) is the one to report, and a preempted run's other ranks
  // wait for rank 0 at a barrier. Nothing before begin().
  void record_state(RunState state) noexcept;

  // The summary, then state.json's finished.
  void finish(const RunSummary& summary);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  const config::Config& config_;
  const RunOrigin& origin_;
  bool begun_ = false;
};

}  // namespace dptrain::run
