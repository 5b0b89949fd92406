// The training loop, top-down in trainer.cpp as pytorch/examples' train() and test() read: the
// session (backend, optimizer, loaders) put together from a resolved config; each epoch trained,
// evaluated, logged and checkpointed; summary.json, model.pt and d2l's line at the end. The run
// folder's files are run/'s; the step is step.h's.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <vector>

#include "config/config.h"
#include "launch/environment.h"
#include "run/metrics.h"
#include "run/origin.h"

namespace dptrain::train {

struct TrainResult {
  run::RunSummary summary;
  std::vector<run::EpochMetrics> epochs;
};

// Trains as `config` says, as `rank` of its job (alone by default), from where `origin` says (a
// fresh start by default). Rank 0 writes config.json, metrics.jsonl, summary.json, model.pt (the
// final parameters) and the checkpoints into `output_dir` (an existing folder) and the epoch lines
// and d2l's summary line to `console`; other ranks write nothing. A SIGTERM or SIGUSR1 ends the
// run after the current step with a checkpoint and an Error(kPreempted).
TrainResult train(const config::Config& config, const std::filesystem::path& output_dir,
                  std::ostream& console, const launch::RankInfo& rank = {},
                  const run::RunOrigin& origin = {});

}  // namespace dptrain::train
