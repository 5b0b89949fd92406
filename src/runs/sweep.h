// `dptrain sweep`: a grid over --set values, in Hydra's multirun spelling
// (--grid optimizer.lr=0.05,0.1 --grid data.batch_size=256,512), each point a run folder
// (<sweep>/<index>) trained by a `dptrain train` of its own. The sweep folder's sweep.json
// states the grid, so that the tasks of a job array, each running one point (--index), agree on
// it; compare.md, rewritten as points end, holds `dptrain compare`'s table of them all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runs/grid.h"

namespace dptrain::core {
class FileLock;
}

namespace dptrain::runs {

struct SweepPlan {
  std::filesystem::path dir;
  std::optional<std::filesystem::path> config;  // --config, made absolute
  std::vector<std::string> sets;                // --set, for every point
  std::vector<GridAxis> axes;
  std::vector<std::string> flags;  // -q or -v, passed to each point's train
  int threads = 0;                 // > 0: runtime.threads for each point (--jobs side by side)
  // Each point's runtime.threads as the experiment, --set and the grid resolve it; where it is 0
  // (not set), `threads` applies.
  std::vector<int64_t> configured_threads;
};

// A whole sweep's hold on its folder (a run without --index) while it lives, so that a second
// whole sweep started there is refused at once, naming the first one's process (sweep.pid),
// instead of each one training into the other's points. The lock is the folder's own flock, as a
// run folder's is (each point's run folder below has its own, taken by its train). Job array
// tasks (--index) take none: SLURM runs several tasks of one sweep at once, each its own point,
// and core::FileLock has no shared lock they could hold together against a whole sweep. A task
// beside a whole sweep of the same folder meets it on their common point, whose run folder lock
// refuses the second train (status 5).
class SweepClaim {
 public:
  explicit SweepClaim(const std::filesystem::path& dir);
  ~SweepClaim();
  SweepClaim(const SweepClaim&) = delete;
  SweepClaim& operator=(const SweepClaim&) = delete;

 private:
  std::filesystem::path dir_;
  std::unique_ptr<const core::FileLock> lock_;
};

// Makes the sweep folder and its sweep.json, or checks that the one there states this sweep
// (a task of the same job array, a requeued task, or a re-run); an error saying what differs
// when it states another. Removes the temporary files a killed sweep left there.
void prepare_sweep_folder(const SweepPlan& plan);

// Trains the points `indices`, `jobs` at a time, each writing into <sweep>/logs/<index>.log (one
// at a time: its lines also passed to stderr, each after "[point <index>] "), each with --resume
// auto so that a re-run or requeued task goes on where its point stopped; a point whose folder
// says it finished is left alone. Each point's thread count is recorded in sweep.json, and a
// warning says when points run now with another count than before. With several points,
// compare.md is rewritten as each ends. A preemption notice or Ctrl-C is passed to the points
// running and no new one starts. Returns the first nonzero exit status of a point (0 when all
// succeed).
int run_points(const SweepPlan& plan, const std::vector<int64_t>& indices, int jobs);

// Rewrites <sweep>/compare.md (under a lock, so that tasks ending together leave the newest
// table) and returns it as text for the console. A table that cannot be made is a warning and
// "", never an exception: it must not hide the points' own status (75 asks for a requeue).
std::string write_sweep_table(const std::filesystem::path& dir, size_t points);

}  // namespace dptrain::runs
