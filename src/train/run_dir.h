// The run's output folder: runs/<name>/<timestamp> by default. A folder that already holds a
// run's results is never written over unless asked, so nothing is lost by a repeated command.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace dptrain::train {

std::filesystem::path make_run_dir(const std::optional<std::filesystem::path>& requested,
                                   const std::string& name, bool overwrite);

}  // namespace dptrain::train
