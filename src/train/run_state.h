// state.json: where a run stands, for whoever reads its folder while or after it runs (`dptrain
// compare`): running (with the process and host, so that a run killed outright can be told from
// one still going), preempted, interrupted, failed or finished. Rank 0 rewrites it atomically at
// each change.
#pragma once

#include <filesystem>
#include <string>

namespace dptrain::train {

enum class RunState { kRunning, kPreempted, kInterrupted, kFailed, kFinished };

const char* name_of(RunState state);

void write_run_state(const std::filesystem::path& dir, RunState state);

}  // namespace dptrain::train
