// The run's output folder: runs/<name>/<timestamp> by default, and the run it holds. A folder that
// already holds a run's results is never written over unless asked; when it is (--overwrite),
// nothing of the earlier run stays that a resume could pick up. Each run has an id, kept in the
// folder's run.json and written into every checkpoint, so that a resume never takes another run's
// checkpoint and two runs never share a checkpoint folder (checkpoint.dir gets one per run).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "config/config.h"

namespace dptrain::train {

enum class RunStart {
  kNew,        // a folder that holds no results
  kOverwrite,  // --overwrite: the earlier run's files are removed, a new run begins
  kResume,     // --resume: the run in the folder goes on (a new one if there is none)
};

struct RunFolder {
  std::filesystem::path dir;
  std::string run_id;
};

// Rank 0 only: makes (or reopens) the folder as `start` says, and gives its run's id: the one its
// run.json holds when resuming, else a new one. Nothing is written yet (a start that fails leaves
// an empty folder, which it removes).
RunFolder open_run_folder(const std::optional<std::filesystem::path>& requested,
                          const config::Config& config, RunStart start);

// run.json, once training can start.
void write_run_file(const std::filesystem::path& dir, const std::string& run_id);

// The run id a folder holds (its run.json), or nothing.
std::optional<std::string> run_id_of(const std::filesystem::path& dir);

// checkpoint.dir/<run id>, or <output>/checkpoints when checkpoint.dir is empty.
std::filesystem::path checkpoint_dir(const config::Config& config,
                                     const std::filesystem::path& output_dir,
                                     const std::string& run_id);

}  // namespace dptrain::train
