// A resume from a checkpoint older than the run's newest starts a new branch of the run. What the
// abandoned branch wrote later (its checkpoints, a later best.pt, the summary.json and model.pt of
// a run it finished) moves into an `abandoned-<time>` folder beside it: `--resume auto` and the
// resume hint then never take it up again, and nothing of it is lost. The choice of the branch is
// one atomic step, the rewind's record (run/rewind_record.h), written before the first file
// moves: a rewind killed while it moves the old branch aside is finished by the next start.
#pragma once

#include <filesystem>
#include <string>

#include "run/resume_point.h"

namespace dptrain::run {

// The folder name set aside files go to ("abandoned-20261126-101500", "-1" and on when taken).
bool is_abandoned_folder_name(const std::string& name);

// Rank 0, once training can start from checkpoint `resume` at `position` (checkpoint_position's
// finished epochs and batches; kEveryCheckpoint sets aside every checkpoint there). Returns how
// many files it moved (0: nothing later, no rewind, and no record written).
int set_aside_abandoned_branch(const std::filesystem::path& output_dir,
                               const std::filesystem::path& checkpoint_dir,
                               const std::filesystem::path& resume, Position position);

// Rank 0, before it trains in a run folder (once every rank could start): finishes the move of a
// rewind that was killed while it set the old branch aside, if its record is there. Returns how
// many files it moved.
int finish_interrupted_rewind(const std::filesystem::path& output_dir,
                              const std::filesystem::path& checkpoint_dir);

}  // namespace dptrain::run
