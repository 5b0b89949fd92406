// ddp's preemption votes come every 16 steps, or sooner where those would take more than
// kVoteSeconds: the number of steps to the next vote follows from the ranks' summed time since the
// last.
#include "support/catch.h"

#include "train/preemption_poll.h"

#include <cmath>

using dptrain::train::kMostStepsBetweenVotes;
using dptrain::train::kVoteSeconds;
using dptrain::train::steps_to_next_vote;

TEST_CASE("the ranks vote on a preemption every 16 steps, or every 2 s where steps are slow",
          "[train]") {
  CHECK(kVoteSeconds == 2.0);
  CHECK(kMostStepsBetweenVotes == 16);
  // ResNet-18 on a CPU, 1.3 s a step on each of 2 ranks: every step votes, not every 16th.
  CHECK(steps_to_next_vote(/*seconds_summed=*/2 * 1.3, /*world=*/2, /*steps=*/1) == 1);
  // 0.15 s a step: 13 steps (1.95 s) to the next vote; LeNet's 30 ms: 16 (0.48 s).
  CHECK(steps_to_next_vote(4 * 16 * 0.15, 4, 16) == 13);
  CHECK(steps_to_next_vote(4 * 16 * 0.03, 4, 16) == kMostStepsBetweenVotes);
  // The ranks' sum, not one rank's time: the mean pace of 3 ranks at 0.125, 0.25 and 0.375 s a
  // step over 8 steps is 0.25 s, 8 steps to the next vote (the slowest alone would give 5).
  CHECK(steps_to_next_vote(8 * (0.125 + 0.25 + 0.375), 3, 8) == 8);
  // A GPU's 0.1 ms steps: 16, as before (1.6 ms).
  CHECK(steps_to_next_vote(8 * 1e-4, 8, 1) == kMostStepsBetweenVotes);
  // No time measured (a clock that did not move), or nan: the cap, never a division by zero.
  CHECK(steps_to_next_vote(0, 2, 5) == kMostStepsBetweenVotes);
  CHECK(steps_to_next_vote(std::nan(""), 2, 5) == kMostStepsBetweenVotes);
}
