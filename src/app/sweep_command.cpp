// dptrain sweep: the grid's points checked up front (each resolves as an experiment), listed
// (--list), or trained into the sweep folder, all of them or one (--index, a job array's task),
// and the folder's comparison table at the end.
#include <spdlog/spdlog.h>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "app/commands.h"
#include "config/config.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/terminal.h"
#include "core/wall_clock.h"
#include "runs/sweep.h"

namespace dptrain::app {
namespace {

std::filesystem::path sweep_folder(const cli::Command& command, const config::Config& base) {
  if (command.output_dir) return *command.output_dir;
  const char* array_job = std::getenv("SLURM_ARRAY_JOB_ID");
  if (array_job != nullptr && *array_job != '\0') {
    return std::filesystem::path("runs") / base.name / ("sweep-" + std::string(array_job));
  }
  if (command.index) {
    usage_error("--index runs one point of a sweep whose folder every task must name",
                "give the sweep folder with --output (a SLURM job array names it after its job "
                "id by itself)");
  }
  std::string stamp = core::utc_iso8601(std::chrono::system_clock::now());
  for (char& c : stamp) {
    if (c == ':') c = '-';
  }
  return std::filesystem::path("runs") / base.name / ("sweep-" + stamp);
}

std::vector<runs::GridAxis> grid_axes(const cli::Command& command) {
  std::vector<runs::GridAxis> axes;
  size_t points = 1;
  for (const auto& spec : command.grid) {
    axes.push_back(runs::parse_grid_axis(spec));
    for (size_t a = 0; a + 1 < axes.size(); ++a) {
      if (axes[a].key == axes.back().key) {
        usage_error("--grid " + spec + ": " + axes[a].key + " has a --grid already",
                    "give all of a key's values in one --grid, separated by commas");
      }
    }
    // Checked before the points are made: two range() axes could ask for a hundred million.
    points *= axes.back().values.size();
    if (points > runs::kMaxGridValues) {
      usage_error("--grid " + spec + ": the grid would have more than " +
                      std::to_string(runs::kMaxGridValues) + " points",
                  "split the sweep, or take fewer values");
    }
  }
  return axes;
}

// Every point must resolve before any trains: a typo fails now, naming its point. Each point's
// experiment (the first one's name names the sweep's folder).
std::vector<config::Config> resolve_points(const cli::Command& command,
                                           const std::vector<std::vector<std::string>>& points) {
  std::vector<config::Config> resolved;
  for (size_t i = 0; i < points.size(); ++i) {
    cli::Command point = command;
    point.overrides.insert(point.overrides.end(), points[i].begin(), points[i].end());
    try {
      resolved.push_back(resolve(point));
    } catch (const core::Error& e) {
      throw core::Error(e.code(), "sweep point " + std::to_string(i) + ": " + e.what(), e.hint());
    }
  }
  return resolved;
}

}  // namespace

int run_sweep(const cli::Command& command) {
  // First thing: a notice that comes while the points are resolved (sweep.sbatch passes on one
  // that came before dptrain started) must end the sweep with 75, not kill it.
  core::install_interrupt_handler();
  core::install_preemption_handler();
  core::release_launcher_signals();  // one held since main acts now, on the handlers
  runs::SweepPlan plan;
  plan.axes = grid_axes(command);
  const auto points = runs::grid_points(plan.axes);
  const std::vector<config::Config> resolved = resolve_points(command, points);
  const config::Config& base = resolved.front();
  if (command.list_points) {
    for (size_t i = 0; i < points.size(); ++i) {
      std::cout << i;
      for (const auto& set : points[i]) std::cout << "  " << set;
      std::cout << "\n";
    }
    return 0;
  }
  if (command.index && *command.index >= static_cast<int64_t>(points.size())) {
    usage_error(
        "--index " + std::to_string(*command.index) + ": the grid has " +
            std::to_string(points.size()) + " points (0 to " + std::to_string(points.size() - 1) +
            ")",
        "`--list` prints them; a job array is --array=0-" + std::to_string(points.size() - 1));
  }
  plan.dir = sweep_folder(command, base);
  // The same file named from another folder (a task's DPTRAIN_HOME, a link) is the same sweep.
  if (command.config_file) plan.config = std::filesystem::weakly_canonical(*command.config_file);
  plan.sets = command.overrides;
  if (command.verbosity == cli::Verbosity::kQuiet) plan.flags = {"-q"};
  if (command.verbosity == cli::Verbosity::kVerbose) plan.flags = {"-v"};
  // Points side by side share the cores, as ddp ranks on a machine do, unless the experiment
  // says how many threads.
  if (command.jobs > 1 && base.runtime.threads == 0) {
    plan.threads =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / command.jobs);
  }
  for (const auto& point : resolved) plan.configured_threads.push_back(point.runtime.threads);
  // A whole sweep holds its folder; a job array's tasks (--index) share theirs (sweep.h).
  std::optional<runs::SweepClaim> claim;
  if (!command.index) claim.emplace(plan.dir);
  runs::prepare_sweep_folder(plan);
  std::vector<int64_t> indices;
  if (command.index) {
    indices.push_back(*command.index);
  } else {
    for (size_t i = 0; i < points.size(); ++i) indices.push_back(static_cast<int64_t>(i));
  }
  const int status = runs::run_points(plan, indices, command.index ? 1 : command.jobs);
  const std::string table = runs::write_sweep_table(plan.dir, points.size());
  // The folder is named after the experiment, whose name is the file's text.
  std::cout << table << "sweep folder: " << core::printable(plan.dir.string())
            << " (table: " << core::printable((plan.dir / "compare.md").string()) << ")"
            << std::endl;
  return status;
}

}  // namespace dptrain::app
