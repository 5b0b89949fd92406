// sweep.json, written and read in one place: what makes two sweeps the same one, what sets two
// apart (in words, for the error that refuses a folder holding another sweep), and the thread
// count each point ran with, recorded beside so that a change can be warned of.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "runs/sweep.h"

namespace dptrain::runs {

// sweep.json's {"<index>": threads}, past its identity: prepare_sweep_folder compares without it.
inline constexpr const char* kThreadsKey = "threads";

// What makes two sweeps the same one: the experiment file (by path and contents: an edited file
// would leave finished points stale beside resumed ones), --set and the grid. runtime.threads is
// left out (sweep.sbatch sets it from each task's --cpus-per-task), though it changes results a
// little (float sums add up in another order): each point's count is recorded beside, under
// kThreadsKey, and a change is a warning (warn_of_thread_change).
nlohmann::json to_json(const SweepPlan& plan);

// The sweep.json at `file`, parsed; an I/O error naming it when it is no JSON.
nlohmann::json read_sweep_file(const std::filesystem::path& file);

// What sets the sweep that sweep.json states (`there`) apart from this one (`here`), in a few
// words for each of the experiment file, --set and the grid.
std::string sweep_difference(const nlohmann::json& there, const nlohmann::json& here);

// The threads point `index` computes with, as train resolves runtime.threads: the point's own
// setting, else its share of the cores beside --jobs, else every core (runtime.threads 0: a dp
// point on several CPUs shares them out alike each time, so that a change still shows here).
int64_t point_threads(const SweepPlan& plan, int64_t index);

// The thread counts that `sweep` (sweep.json's contents) records, by point index.
std::map<std::string, int64_t> recorded_threads(const nlohmann::json& sweep);

// Records point `index`'s thread count in <dir>/sweep.json. Under the folder's lock, as the tasks
// of a job array record theirs side by side.
void record_threads(const std::filesystem::path& dir, int64_t index, int64_t threads);

}  // namespace dptrain::runs
