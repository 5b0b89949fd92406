// Where a run stands between two optimizer steps, besides the tensors the backend and optimizer
// own: what a checkpoint's record holds, and what a resumed run goes on from. One type for the
// trainer that fills it, the checkpoint format that writes and reads it, and the run folder's
// rewind logic that compares positions.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "run/metrics.h"

namespace dptrain::run {

// Early stopping's watch (train/early_stopping.h): what it needs to go on where it left off.
struct EarlyStoppingState {
  int64_t best_epoch = 0;
  double best = 0;
  int64_t without_improvement = 0;
};

// fp16's dynamic loss scale (train/grad_scaler.h).
struct ScalerState {
  double scale = 65536.0;
  int64_t clean_steps = 0;  // since the last change of scale
};

// A position in a run: finished epochs, then batches taken of the next. Positions order as
// training goes.
using Position = std::pair<int64_t, int64_t>;

struct ResumePoint {
  std::string run_id;                // the run it belongs to (its output folder's run.json)
  int64_t epoch = 0;                 // the epoch under way or next (0-based)
  int64_t batches_done = 0;          // its batches already taken (non-zero after a preemption)
  int64_t global_step = 0;           // optimizer steps taken since the run began
  EpochTally partial;                // those batches' sums over every rank
  std::vector<EpochMetrics> epochs;  // the finished epochs' records
  EarlyStoppingState early_stopping;
  std::vector<torch::Tensor> best_weights;  // early stopping's, when it restores them
  ScalerState scaler;
  // The digest of the listing of the folder of pictures it trained on (data/sources.h); empty
  // for IDX files.
  std::string data_listing;

  Position position() const { return {epoch, batches_done}; }
};

}  // namespace dptrain::run
