// The console's words: one line per epoch, and d2l's closing line
// "test acc: 0.84, 4.10 sec/epoch on [cpu]".
#pragma once

#include <string>

#include "run/metrics.h"

namespace dptrain::train {

// `x` with three significant digits, trailing zeros kept: 4.1 -> "4.10", 27.31 -> "27.3".
std::string three_significant(double x);

std::string format_epoch_line(const run::EpochMetrics& m, int64_t epochs);

std::string format_summary_line(double test_acc, double sec_per_epoch, const std::string& devices);

}  // namespace dptrain::train
