// Reading run folders as `dptrain compare` and `dptrain sweep` see them: what the run was
// (config.json), what it measured (metrics.jsonl, summary.json) and where it stands
// (state.json), and which folders the command line names. The names are run/layout.h's, the
// states run/state.h's.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "run/layout.h"
#include "run/state.h"

namespace dptrain::run {

struct RunView {
  std::filesystem::path dir;
  nlohmann::json config = nlohmann::json::object();  // config.json; empty before the run starts
  std::optional<nlohmann::json> summary;             // summary.json: only a finished run's
  std::vector<nlohmann::json> epochs;                // metrics.jsonl, one object per epoch
  // finished, running, preempted, interrupted, failed, "stopped" (state.json says running but
  // its process on this host is gone: killed outright), or "unfinished" (no state.json: a run of
  // an older dptrain, or one not yet started, without summary.json).
  std::string state;
  bool finished() const { return state == name_of(RunState::kFinished); }
};

// The folder's run; an I/O error naming the file that is not what dptrain writes.
RunView read_run(const std::filesystem::path& dir);

// The run folders the arguments name, in order, each once: a run folder; a glob (expanded here
// when the shell left it, quoted); or any other folder (a sweep's, runs/, runs/<name>/), for the
// runs below it in name order, numbers by value. A usage error names an argument that holds no
// run.
std::vector<std::filesystem::path> find_runs(const std::vector<std::string>& args);

}  // namespace dptrain::run
