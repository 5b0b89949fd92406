// The epoch loop: data, model, backend and optimizer put together from a resolved config; one
// console line and one metrics record per epoch; summary.json and d2l's line at the end.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <vector>

#include "config/config.h"
#include "distributed/rendezvous.h"
#include "train/metrics.h"
#include "train/run_dir.h"
#include "train/session.h"

namespace dptrain::train {

struct TrainResult {
  RunSummary summary;
  std::vector<EpochMetrics> epochs;
};

// Where a run begins: a checkpoint to resume, or else weights to start from (a state_dict or a
// checkpoint's parameters) instead of the seeded initialisation. Rank 0 chooses: the other ranks'
// choices are not read, and every rank checks it holds rank 0's file (train/start_file.h).
struct Start {
  RunRecord run;  // the output folder's run (train/run_dir.h), whose id its checkpoints carry
  bool replace_earlier = false;  // --overwrite: the folder's earlier run goes once this one starts
  std::optional<std::filesystem::path> resume;
  std::optional<std::filesystem::path> init_from;
  // How it was started, for summary.json, and the command line that goes on from its newest
  // checkpoint, for the messages of an interrupted or preempted run (empty: "the same command
  // with --resume auto").
  std::vector<std::string> command;
  std::string resume_command;
};

// Trains as `config` says, as `rank` of its job (alone by default), from the start or as `start`
// says. Rank 0 writes config.json, metrics.jsonl, summary.json, model.pt (the
// final parameters) and the checkpoints into `output_dir` (an existing folder) and the epoch lines
// and d2l's summary line to `console`; other ranks write nothing. A SIGTERM or SIGUSR1 ends the
// run after the current step with a checkpoint and an Error(kPreempted).
TrainResult train(const config::Config& config, const std::filesystem::path& output_dir,
                  std::ostream& console, const distributed::RankInfo& rank = {},
                  const Start& start = {});

}  // namespace dptrain::train
