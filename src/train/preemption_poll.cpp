#include "train/preemption_poll.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/interrupt.h"

namespace dptrain::train {

int64_t steps_to_next_vote(double seconds_summed, int world, int64_t steps) {
  const double per_step =
      seconds_summed / std::max(world, 1) / static_cast<double>(std::max<int64_t>(steps, 1));
  if (!(per_step > 0)) return kMostStepsBetweenVotes;  // no time measured (or nan)
  const double fit = std::floor(kVoteSeconds / per_step);
  return fit >= static_cast<double>(kMostStepsBetweenVotes)
             ? kMostStepsBetweenVotes
             : std::max<int64_t>(1, static_cast<int64_t>(fit));
}

bool PreemptionPoll::voted(parallel::Backend& backend) {
  if (backend.world_size() == 1) return core::preemption_requested();
  if (++steps_since_vote_ < steps_to_vote_) return false;
  // The time is summed with the vote, in whole microseconds: integers under 2^53 add up to the
  // same double in any order, so every rank gets the same sum, and the same next vote. The clock
  // restarts before the vote, so that a rank's wait in it counts towards the next interval.
  const double micros = std::round(since_vote_.seconds() * 1e6);
  since_vote_ = core::Stopwatch();
  std::vector<double> votes = {core::preemption_requested() ? 1.0 : 0.0, micros};
  backend.all_reduce_sum(votes);
  steps_to_vote_ = steps_to_next_vote(votes[1] / 1e6, backend.world_size(), steps_since_vote_);
  steps_since_vote_ = 0;
  return votes[0] > 0;
}

}  // namespace dptrain::train
