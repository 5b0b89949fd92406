// The record of a rewind under way (run/branch.h): written and flushed to disk before the first
// file of the abandoned branch moves, removed once the last one has. It makes the choice of the
// branch one atomic step: a run killed while it moved the branch aside leaves the record, and the
// next training start in the folder finishes the move before it trains, and with --resume auto goes
// on from the checkpoint the rewind named. Besides that checkpoint it holds a position and a
// folder's name, never the files to move: the moves are worked out again from the folder, so that a
// record someone else wrote moves only the run's own checkpoints and results, into a folder of the
// run's, and never over a file there. A checkpoint of the run's own is named by its file name in
// the checkpoint folder: a run folder moved or copied goes on from its own.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "run/resume_point.h"

namespace dptrain::run {

// A rewind to a checkpoint from outside the checkpoint folder sets every checkpoint there aside.
inline constexpr Position kEveryCheckpoint{-1, -1};

struct RewindRecord {
  // The checkpoint the rewind goes on from (absolute): in the checkpoint folder, or from outside it
  // when `after` is kEveryCheckpoint.
  std::filesystem::path resume;
  Position after;  // what the abandoned branch wrote later than this goes aside
  // The abandoned-<time> folder it moves into: in the checkpoint folder for the checkpoints,
  // in the run folder for the results (each made only when it has files to hold).
  std::string aside;
};

// Written atomically into the run folder `dir` (kRewindFile), flushed to disk.
void write_rewind_record(const std::filesystem::path& dir, const RewindRecord& record);

// The record a killed rewind left in `dir`, if any, its checkpoint resolved in `checkpoint_dir`;
// an I/O error naming the file (and a hint) when it is not one that write_rewind_record wrote.
std::optional<RewindRecord> pending_rewind(const std::filesystem::path& dir,
                                           const std::filesystem::path& checkpoint_dir);

// Refuses, naming the record, one whose position is not that of its own checkpoint (read there):
// it would set aside some other part of the run than the rewind did.
void check_rewind_position(const std::filesystem::path& dir, const RewindRecord& record);

// Removes the record once its moves are done, and flushes the folder: from then on the move is
// finished for every later start.
void remove_rewind_record(const std::filesystem::path& dir);

}  // namespace dptrain::run
