// How a run ends, in words: the error of a preempted or interrupted run with the command that goes
// on from its checkpoint, and the summary's account of how and where the run was made.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "config/config.h"
#include "core/error.h"
#include "parallel/backend.h"
#include "run/metrics.h"
#include "run/origin.h"

namespace dptrain::train {

// The error that ends a preempted run (stopped after m.batches of `batches`; rank 0 wrote `path`
// when `writer`): exit status 75, so that a batch script can requeue it.
core::Error preempted_error(const run::EpochMetrics& m, int64_t batches,
                            const std::filesystem::path& path, bool writer,
                            const run::RunOrigin& origin);

// Ctrl-C's error `e`, with the hint to go on from the newest checkpoint (it writes none).
core::Error interrupted_error(const core::Error& e, const run::RunOrigin& origin);

// The summary's backend, devices, ranks, threads, precision, versions, hosts (a collective), the
// command line and this invocation's start and end.
void describe_run(parallel::Backend& backend, const config::Config& config,
                  const run::RunOrigin& origin, std::chrono::system_clock::time_point started_at,
                  run::RunSummary& summary);

}  // namespace dptrain::train
