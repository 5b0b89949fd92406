// The epoch under way: its record so far, its sums (kept on the device as steps add to them, so
// that no step waits to read them) and whether a preemption stopped it; reduced over the ranks
// into the epoch's figures when it ends, or into the sums a checkpoint keeps of it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "core/timer.h"
#include "data/dataset.h"
#include "parallel/backend.h"
#include "run/resume_point.h"
#include "train/grad_scaler.h"
#include "train/live_progress.h"
#include "train/step.h"

namespace dptrain::train {

class EpochState {
 public:
  // Epoch `epoch` (0-based) from its start, or from where `resume` stopped in it.
  // `global_step`: the optimizer steps taken before this pass (or its resumed rest) begins.
  EpochState(int64_t epoch, parallel::Backend& backend, const run::ResumePoint* resume,
             int64_t global_step = 0);

  // The clock starts once the batches trained before a preemption are skipped.
  void start_clock() { timer_ = core::Stopwatch(); }
  // A micro-batch's loss and hits, and its samples.
  void add(const MicroBatchOutput& mb, const data::Batch& batch);
  // The live line's figures: this rank's fresh samples, its running loss.
  ProgressFigures progress_figures(int64_t epochs, int64_t batches) const;
  // The sums so far over every rank, as a checkpoint within the epoch keeps them (a collective).
  run::EpochTally reduced_so_far(parallel::Backend& backend) const;
  // The epoch's end, after `global_step` steps: its sums over the ranks (a collective) and, when
  // it ran to its end, its means; its time and communication wait.
  void finish(parallel::Backend& backend, int64_t global_step, const GradScaler& scaler);

  int64_t index = 0;       // 0-based
  run::EpochMetrics m;     // finished: the epoch's figures; preempted: the counts so far, no means
  run::EpochTally tally;   // over every rank once finished: what a preemption's checkpoint keeps
  bool preempted = false;  // stopped after m.batches batches for a preemption

 private:
  run::EpochTally reduced(parallel::Backend& backend, double seconds) const;

  torch::Tensor loss_;          // float64, this rank's (with a resumed epoch's on rank 0)
  torch::Tensor correct_;       // int64
  int64_t samples_before_ = 0;  // this rank's, from before a preemption
  double waited_before_ = 0;
  int64_t bytes_before_ = 0;
  int64_t steps_before_ = 0;
  core::Stopwatch timer_;
};

// Each rank's optimizer-state, gradient, peak resident and peak GPU bytes, gathered into every
// rank's record (a collective).
void measure_memory(parallel::Backend& backend, const torch::optim::Optimizer& optimizer,
                    run::EpochMetrics& m);

// "in epoch 3 after batch 17 of 235", for messages.
std::string where_in_epoch(int64_t epoch, int64_t batch, int64_t batches);

}  // namespace dptrain::train
