// A run's branches in the tests of rewinds (tests/cli/rewind_*): the short run that is rewound,
// the rewind itself, and what a folder holds afterwards.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/fixtures.h"

namespace dptrain::testing {

// 600 real images in batches of 30: two epochs of 20 steps, a checkpoint every 5 (all kept).
std::vector<std::string> branch_job(const TempDir& dir, const std::filesystem::path& out,
                                    const std::vector<std::string>& more = {});

// The rewind: `resume` (or "auto") with another learning rate than branch_job's.
std::vector<std::string> rewind_of(const TempDir& dir, const std::filesystem::path& run,
                                   const std::string& resume);

// Every file under `dir` and its bytes (a write_file_atomic temporary left by a kill aside).
std::map<std::string, std::string> folder_bytes(const std::filesystem::path& dir);

// The abandoned-<time> folders in `dir`.
std::vector<std::filesystem::path> folders_named_abandoned(const std::filesystem::path& dir);

// The train_loss of each epoch in metrics.jsonl.
std::vector<double> train_losses(const std::filesystem::path& run);

}  // namespace dptrain::testing
