// When ddp's ranks vote on a preemption notice (SIGTERM, SIGUSR1), so that all of them stop after
// the same step. A vote is an all-reduce that waits for the device, too costly for every step of
// a GPU's millisecond steps, and a count of steps between votes is no time: ResNet-18's 1.3 s steps
// on a CPU (the hostile review's figure) left notices unanswered for 13 to 17 s, close to the 30 s
// SLURM leaves before its SIGKILL. So the ranks vote every kMostStepsBetweenVotes steps, or
// sooner where those would take more than kVoteSeconds: each vote also sums how long each rank
// took since the last, and from that mean every rank works out the same number of steps to the
// next one.
#pragma once

#include <cstdint>

#include "core/timer.h"
#include "parallel/backend.h"

namespace dptrain::train {

// At most this long between votes, whatever a step costs (but for a pace that changes at once),
// and at most this many steps (as before: a fast run's notice is acted on within a few steps).
constexpr double kVoteSeconds = 2.0;
constexpr int64_t kMostStepsBetweenVotes = 16;

// Steps to the next vote after `steps` steps took `seconds_summed` over `world` ranks: as many as
// fill kVoteSeconds at their mean pace, at least 1 and at most kMostStepsBetweenVotes.
int64_t steps_to_next_vote(double seconds_summed, int world, int64_t steps);

class PreemptionPoll {
 public:
  // After each optimizer step: whether a scheduler asked this job to stop, decided by every rank
  // together. One process reads its own flag every step.
  bool voted(parallel::Backend& backend);

 private:
  int64_t steps_to_vote_ = 1;  // the first step votes, and measures
  int64_t steps_since_vote_ = 0;
  core::Stopwatch since_vote_;
};

}  // namespace dptrain::train
