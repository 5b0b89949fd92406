#include "run/state.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <nlohmann/json.hpp>

#include "config/json_text.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/wall_clock.h"
#include "run/layout.h"

namespace dptrain::run {

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
  core::write_file_atomic(dir / kStateFile, j.dump(2) + "\n");
}

namespace {

// What the reader reports for a run that has not finished and says nothing more.
const char* const kUnfinished = "unfinished";

// state.json's state, as the reader reports it.
std::string state_in(const nlohmann::json& j, bool has_summary) {
  std::string state = j.value("state", std::string(kUnfinished));
  if (state == name_of(RunState::kFinished) && !has_summary) return kUnfinished;
  // A process killed outright (SIGKILL, a node lost) leaves "running" behind; on this host its
  // pid tells. On another host it cannot be told from a run still going.
  if (state == name_of(RunState::kRunning) && j.value("host", "") == core::host_name()) {
    const int64_t pid = config::integer_at(j, "pid", 0);
    if (pid > 0 && pid <= INT32_MAX && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      return "stopped";
    }
  }
  return state;
}

}  // namespace

std::string read_run_state(const std::filesystem::path& dir, bool has_summary) {
  const std::filesystem::path file = dir / kStateFile;
  if (!std::filesystem::exists(file)) {
    return has_summary ? name_of(RunState::kFinished) : kUnfinished;
  }
  try {
    return state_in(config::parse_json(core::read_regular_file(file)), has_summary);
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(core::ErrorCode::kIo, file.string() + ": " + config::plain_json_error(e),
                      "is this a run folder dptrain wrote? leave it out of the list");
  }
}

}  // namespace dptrain::run
