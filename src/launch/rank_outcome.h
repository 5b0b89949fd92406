// What became of a rank that dptrain's launcher started, and which of several failed ranks to
// blame for a job's end.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dptrain::launch {

struct Outcome {
  int rank = 0;
  pid_t pid = 0;
  int status = 0;    // exit status, or 128 + the signal that killed it, as a shell reports it
  std::string what;  // "exited with status 8", "was killed by signal 9 (Killed)"
  bool stopped_by_us = false;  // 130 after the launcher sent SIGINT: its stop, not a failure
};

// From waitpid's status.
Outcome outcome_of(int rank, pid_t pid, int raw_status);

// The rank to blame: the first whose failure is neither the stop the launcher asked for (SIGINT,
// status 130) nor merely another rank's failure showing through a broken collective (a
// distributed error's status); failing that, the first that is not the launcher's stop.
// `failures` is in the order the ranks ended, and not empty.
const Outcome& culprit(const std::vector<Outcome>& failures);

}  // namespace dptrain::launch
