// state.json: where a run stands, for whoever reads its folder while or after it runs (`dptrain
// compare`): running (with the process and host, so that a run killed outright can be told from
// one still going), preempted, interrupted, failed or finished. Rank 0 rewrites it atomically at
// each change.
#pragma once

#include <filesystem>
#include <string>

namespace dptrain::run {

enum class RunState { kRunning, kPreempted, kInterrupted, kFailed, kFinished };

// As state.json spells it ("running", ...).
const char* name_of(RunState state);

void write_run_state(const std::filesystem::path& dir, RunState state);

// What a reader makes of a folder's state.json: its state, "stopped" when it says running but its
// process on this host is gone (killed outright), "unfinished" when there is none (a run of an
// older dptrain, or one not yet started) or it says finished without summary.json (`has_summary`
// says whether there is one). An I/O error naming the file when it is not what dptrain writes.
std::string read_run_state(const std::filesystem::path& dir, bool has_summary);

}  // namespace dptrain::run
