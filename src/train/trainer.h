// The epoch loop: data, model, backend and optimizer put together from a resolved config; one
// console line and one metrics record per epoch; summary.json and d2l's line at the end.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <vector>

#include "config/config.h"
#include "train/metrics.h"

namespace dptrain::train {

struct TrainResult {
  RunSummary summary;
  std::vector<EpochMetrics> epochs;
};

// Trains as `config` says, writing config.json, metrics.jsonl and summary.json into `output_dir`
// (an existing folder) and the epoch lines and d2l's summary line to `console`.
TrainResult train(const config::Config& config, const std::filesystem::path& output_dir,
                  std::ostream& console);

}  // namespace dptrain::train
