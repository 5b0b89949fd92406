// `compare --plot FILE.svg`: train loss and test accuracy per epoch, a line per run, side by side,
// drawn by gnuplot (as scripts/reproduce_d2l.sh draws d2l's curves).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "run/reader.h"

namespace dptrain::runs {

// Writes the picture to `svg` (through a temporary beside it). A usage error with the package to
// install when gnuplot is missing; an error with gnuplot's words when it fails.
void plot_runs(const std::vector<run::RunView>& runs, const std::vector<std::string>& names,
               const std::filesystem::path& svg);

}  // namespace dptrain::runs
