// A resume from a checkpoint older than the run's newest starts a new branch of the run. What the
// abandoned branch wrote later (its checkpoints, a later best.pt, the summary.json and model.pt of
// a run it finished) moves into an `abandoned-<time>` folder beside it: `--resume auto` and the
// resume hint then never take it up again, and nothing of it is lost.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "run/resume_point.h"

namespace dptrain::run {

// The folder name set aside files go to ("abandoned-20261126-101500", "-1" and on when taken).
bool is_abandoned_folder_name(const std::string& name);

// Rank 0, once training can start from `position` (checkpoint_position's finished epochs and
// batches; {-1, -1} sets aside every checkpoint there). Returns how many files it moved (0:
// nothing later, no rewind).
int set_aside_abandoned_branch(const std::filesystem::path& output_dir,
                               const std::filesystem::path& checkpoint_dir, Position position);

}  // namespace dptrain::run
