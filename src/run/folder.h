// The run's output folder: runs/<name>/<timestamp> by default, and the run it holds. A folder that
// already holds a run's results is never written over unless asked; when it is (--overwrite),
// nothing of the earlier run stays that a resume could pick up. Each run has an id, kept in the
// folder's run.json and written into every checkpoint, so that a resume never takes another run's
// checkpoint and two runs never share a checkpoint folder (checkpoint.dir gets one per run).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "core/file_lock.h"

namespace dptrain::run {

// How a training opens its output folder.
enum class FolderMode {
  kNew,        // a folder that holds no results
  kOverwrite,  // --overwrite: a new run begins; the earlier run's files go once it can start
  kResume,     // --resume: the run in the folder goes on (a new one if there is none)
};

// What a folder's run.json holds.
struct RunRecord {
  std::string run_id;  // 16 hex digits
  // The job that started the run last (its launcher's job id): a restart or requeue of that job
  // goes on with the run even where its command line says --overwrite.
  std::string job;
  // A run that began from another run's checkpoint (--resume FILE into a folder of its own):
  // that file and its run. A restart before the run's first checkpoint goes on from the file,
  // and the file stays resumable by name into this folder.
  std::string resumed_from;
  std::string resumed_from_run;
};

struct RunFolder {
  std::filesystem::path dir;
  // Held while the run trains: a second training into the folder is refused meanwhile.
  std::shared_ptr<const core::FileLock> lock;
  RunRecord record;
  bool existing = false;          // the record was the folder's own (a resume of its run)
  bool replaces_earlier = false;  // --overwrite: remove_earlier_run() once training can start
};

// Rank 0 only: makes (or reopens) and locks the folder as `mode` says, with its run's record: the
// one its run.json holds when resuming, else a new one. An error naming the folder while another
// dptrain trains into it. Nothing is written or removed yet, so that a
// start that fails leaves the folder as it was (or no folder, removed by the caller).
RunFolder open_run_folder(const std::optional<std::filesystem::path>& requested,
                          const config::Config& config, FolderMode mode);

// --overwrite, once training can start: run.json first (so that checkpoints a crash here left
// belong to no run the folder names), then the earlier run's checkpoints and results.
void remove_earlier_run(const std::filesystem::path& dir, const config::Config& config);

// run.json, once training can start.
void write_run_file(const std::filesystem::path& dir, const RunRecord& record);

// The record a folder holds (its run.json), or nothing; an I/O error naming the file when it is
// not one dptrain wrote.
std::optional<RunRecord> run_record_of(const std::filesystem::path& dir);

// Whether `id` has the form of a run id (it becomes a folder name under checkpoint.dir).
bool is_run_id(const std::string& id);

}  // namespace dptrain::run
