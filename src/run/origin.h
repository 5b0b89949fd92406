// Where a training begins, as rank 0 decides it from the command line and the output folder: the
// folder (made, reopened or to be overwritten, and locked), its run, and the checkpoint to resume
// or the weights to start from. The rules: --overwrite replaces the folder's run, unless it is the
// run this very job began (a requeue keeps its command line); --resume FILE goes on from a
// checkpoint of the folder's run, or of the run it began from, or begins a run of its own from
// it in a folder of no run; --resume auto takes the run's newest checkpoint, or where it began,
// or a fresh start, so that one command serves a job's first run and its requeues.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/file_lock.h"
#include "run/folder.h"

namespace dptrain::run {

// What the command line and the launcher ask for.
struct OriginRequest {
  std::optional<std::filesystem::path> output;  // --output; none: runs/<name>/<time>
  bool overwrite = false;                       // --overwrite
  std::optional<std::string> resume;            // --resume FILE, or "auto"
  std::optional<std::filesystem::path> init_from;
  std::string job_id;     // the launcher's job id (empty: none)
  int restart_count = 0;  // the launcher's restarts of this job so far
};

// Where a run begins. Rank 0 chooses: the other ranks' choices are not read, and every rank
// checks it holds rank 0's file (train/start_file.h).
struct RunOrigin {
  RunRecord run;                 // the output folder's run, whose id its checkpoints carry
  bool replace_earlier = false;  // --overwrite: the folder's earlier run goes once this one starts
  std::optional<std::filesystem::path> resume;     // a checkpoint to go on from
  std::optional<std::filesystem::path> init_from;  // else weights to start from
  // How it was started, for summary.json, and the command line that goes on from its newest
  // checkpoint, for the messages of an interrupted or preempted run (empty: "the same command
  // with --resume auto").
  std::vector<std::string> command;
  std::string resume_command;
};

// The folder a chosen origin trains into, held locked until the run has ended.
struct OpenedOrigin {
  RunOrigin origin;
  std::filesystem::path output;
  std::shared_ptr<const core::FileLock> lock;
};

// Rank 0's choice; an error naming the file or folder (and a hint) when the request cannot be
// met: a checkpoint of another run, a damaged one, a folder in use or holding results.
OpenedOrigin choose_origin(const OriginRequest& request, const config::Config& config);

}  // namespace dptrain::run
