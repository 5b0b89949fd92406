#include "train/run_state.h"

#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/wall_clock.h"

namespace dptrain::train {

const char* name_of(RunState state) {
  switch (state) {
    case RunState::kRunning:
      return "running";
    case RunState::kPreempted:
      return "preempted";
    case RunState::kInterrupted:
      return "interrupted";
    case RunState::kFailed:
      return "failed";
    case RunState::kFinished:
      return "finished";
  }
  return "unknown";
}

void write_run_state(const std::filesystem::path& dir, RunState state) {
  const nlohmann::json j = {{"state", name_of(state)},
                            {"pid", ::getpid()},
                            {"host", core::host_name()},
                            {"updated_at", core::utc_iso8601(std::chrono::system_clock::now())}};
  core::write_file_atomic(dir / "state.json", j.dump(2) + "\n");
}

}  // namespace dptrain::train
