// `dptrain sweep`: a grid over --set values, in Hydra's multirun spelling
// (--grid optimizer.lr=0.05,0.1 --grid data.batch_size=256,512), each point a run folder
// (<sweep>/<index>) trained by a `dptrain train` of its own. The sweep folder's sweep.json
// states the grid, so that the tasks of a job array, each running one point (--index), agree on
// it; compare.md, rewritten as points end, holds `dptrain compare`'s table of them all.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dptrain::runs {

struct GridAxis {
  std::string key;
  std::vector<std::string> values;  // as --set reads them
};

// "key=v1,v2,...": commas inside brackets, braces or double quotes belong to a value
// (parallel.devices=["cpu","cpu"],cpu is two values). A usage error names a malformed one.
GridAxis parse_grid_axis(const std::string& spec);

// Every point of the grid as its --set overrides ("key=value"), the first axis slowest, as
// Hydra numbers them.
std::vector<std::vector<std::string>> grid_points(const std::vector<GridAxis>& axes);

struct SweepPlan {
  std::filesystem::path dir;
  std::optional<std::filesystem::path> config;  // --config, made absolute
  std::vector<std::string> sets;                // --set, for every point
  std::vector<GridAxis> axes;
  std::vector<std::string> flags;  // -q or -v, passed to each point's train
  int threads = 0;                 // > 0: runtime.threads for each point (--jobs side by side)
};

// Makes the sweep folder and its sweep.json, or checks that the one there states this sweep
// (a task of the same job array, a requeued task, or a re-run); an error when it states another.
void prepare_sweep_folder(const SweepPlan& plan);

// Trains the points `indices`, `jobs` at a time (one: in this terminal; more: each into
// <sweep>/logs/<index>.log), each with --resume auto so that a re-run or requeued task goes on
// where its point stopped; a point whose folder says it finished is left alone. With several
// points, compare.md is rewritten as each ends. A preemption notice or Ctrl-C is passed to the
// points running and no new one starts. Returns the first nonzero exit status of a point (0
// when all succeed).
int run_points(const SweepPlan& plan, const std::vector<int64_t>& indices, int jobs);

// Rewrites <sweep>/compare.md (under a lock, so that tasks ending together leave the newest
// table) and returns it as text for the console. A table that cannot be made is a warning and
// "", never an exception: it must not hide the points' own status (75 asks for a requeue).
std::string write_sweep_table(const std::filesystem::path& dir, size_t points);

}  // namespace dptrain::runs
