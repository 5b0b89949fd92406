#include "launch/rank_outcome.h"

#include <sys/wait.h>

#include <cstring>

#include "core/error.h"

namespace dptrain::launch {

Outcome outcome_of(int rank, pid_t pid, int raw_status) {
  Outcome o{rank, pid, 0, "", false};
  if (WIFSIGNALED(raw_status)) {
    o.status = 128 + WTERMSIG(raw_status);
    o.what = "was killed by signal " + std::to_string(WTERMSIG(raw_status)) + " (" +
             strsignal(WTERMSIG(raw_status)) + ")";
  } else {
    o.status = WEXITSTATUS(raw_status);
    o.what = "exited with status " + std::to_string(o.status);
  }
  return o;
}

const Outcome& culprit(const std::vector<Outcome>& failures) {
  const int broken_collective = core::exit_status(core::ErrorCode::kDistributed);
  for (const auto& f : failures) {
    if (!f.stopped_by_us && f.status != broken_collective) return f;
  }
  for (const auto& f : failures) {
    if (!f.stopped_by_us) return f;
  }
  return failures.front();
}

}  // namespace dptrain::launch
