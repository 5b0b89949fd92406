// Whom dptrain's launcher blames when several ranks end badly.
#include "launch/rank_outcome.h"

#include "support/catch.h"

using dptrain::launch::culprit;
using dptrain::launch::Outcome;

namespace {

Outcome failure(int rank, int status, bool stopped_by_us = false) {
  return Outcome{rank, 100 + rank, status, "exited with status " + std::to_string(status),
                 stopped_by_us};
}

}  // namespace

TEST_CASE(
    "the launcher blames the rank that failed, not those its stop or a broken collective "
    "ended",
    "[dist]") {
  // Rank 1 lost its peer (8), then rank 0 stopped on the launcher's SIGINT (130): rank 1.
  CHECK(culprit({failure(1, 8), failure(0, 130, true)}).rank == 1);
  // A real failure (137, a kill) wins over a broken collective reaped before it.
  CHECK(culprit({failure(0, 8), failure(1, 137)}).rank == 1);
  // A 130 that the launcher did not ask for is a failure like any other.
  CHECK(culprit({failure(0, 8), failure(1, 130, false)}).rank == 1);
  // Only stops and broken collectives: the first broken collective.
  CHECK(culprit({failure(2, 130, true), failure(0, 8), failure(1, 8)}).rank == 0);
  CHECK(culprit({failure(3, 130, true)}).rank == 3);
}
