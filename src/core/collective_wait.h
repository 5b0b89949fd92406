// A rank blocked in a collective cannot act on a preemption notice or a Ctrl-C: it acts between
// steps, and with a peer stuck (stopped, deadlocked) the collective ends only after
// parallel.timeout_s, while torchrun and SLURM send SIGKILL 30 s after their SIGTERM. So while a
// CollectiveWait is open, a notice that has waited kStuckAfterNotice ends the process at once,
// with status 8 (a distributed error), and a Ctrl-C with 130 (as a Ctrl-C between steps), each
// with a line naming the collective; no checkpoint can be taken inside one. A
// healthy job's collectives last milliseconds; the longest legitimate wait is the one for rank 0
// writing a checkpoint, which must take less than kStuckAfterNotice.
#pragma once

#include <chrono>
#include <string>

namespace dptrain::core {

constexpr std::chrono::seconds kStuckAfterNotice{10};

class CollectiveWait {
 public:
  // `what` names the collective in the message ("the all-reduce of gradient bucket 0").
  explicit CollectiveWait(const std::string& what);
  ~CollectiveWait();
  CollectiveWait(const CollectiveWait&) = delete;
  CollectiveWait& operator=(const CollectiveWait&) = delete;
};

}  // namespace dptrain::core
