#include "runs/sweep.h"

#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "config/json_text.h"
#include "core/child_process.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "core/fs.h"
#include "core/interrupt.h"
#include "core/sha256.h"
#include "runs/compare.h"
#include "runs/run_folder.h"

namespace dptrain::runs {
namespace {

[[noreturn]] void bad_axis(const std::string& spec, const std::string& what) {
  throw core::Error(core::ErrorCode::kUsage, "--grid " + spec + ": " + what,
                    "write --grid key.path=value1,value2 (a value with commas in brackets or "
                    "quotes: --grid 'parallel.devices=[\"cpu\"],[\"cpu\",\"cpu\"]')");
}

// What makes two sweeps the same one: the experiment file (by path and contents: an edited file
// would leave finished points stale beside resumed ones), --set and the grid. runtime.threads is
// left out: it changes how fast a point trains, not what it learns, and sweep.sbatch sets it
// from each task's --cpus-per-task.
nlohmann::json to_json(const SweepPlan& plan) {
  nlohmann::json grid = nlohmann::json::array();
  for (const auto& axis : plan.axes) grid.push_back({{"key", axis.key}, {"values", axis.values}});
  nlohmann::json sets = nlohmann::json::array();
  for (const auto& set : plan.sets) {
    if (set.rfind("runtime.threads=", 0) != 0) sets.push_back(set);
  }
  return {
      {"config", plan.config ? nlohmann::json(plan.config->string()) : nlohmann::json()},
      {"config_sha256",
       plan.config ? nlohmann::json(core::hex(core::sha256(core::read_regular_file(*plan.config))))
                   : nlohmann::json()},
      {"sets", sets},
      {"grid", grid},
      {"points", grid_points(plan.axes)}};
}

std::vector<std::string> train_args(const SweepPlan& plan, const std::vector<std::string>& point,
                                    int64_t index) {
  std::vector<std::string> args = {"train"};
  if (plan.config) args.insert(args.end(), {"--config", plan.config->string()});
  if (plan.threads > 0) {
    args.insert(args.end(), {"--set", "runtime.threads=" + std::to_string(plan.threads)});
  }
  for (const auto& s : plan.sets) args.insert(args.end(), {"--set", s});
  for (const auto& s : point) args.insert(args.end(), {"--set", s});
  args.insert(args.end(),
              {"--output", (plan.dir / std::to_string(index)).string(), "--resume", "auto"});
  args.insert(args.end(), plan.flags.begin(), plan.flags.end());
  return args;
}

// The points running, by pid. Leaving run_points by an exception (a log that cannot be opened,
// no processes left) stops those still running as a preemption would (each writes a checkpoint
// and exits 75) and waits for them: no point trains on unwatched, none is left a zombie.
class RunningPoints {
 public:
  RunningPoints() = default;
  RunningPoints(const RunningPoints&) = delete;
  RunningPoints& operator=(const RunningPoints&) = delete;
  ~RunningPoints() {
    signal_all(SIGTERM);
    // A point stuck where it cannot act on the notice is killed after a grace, as the launcher
    // does with its ranks.
    constexpr int kGraceTenths = 300;
    for (int t = 0; !points_.empty() && t < kGraceTenths; ++t) {
      int raw = 0;
      const pid_t pid = ::waitpid(-1, &raw, WNOHANG);
      if (pid > 0) take(pid);
      if (pid == 0 || (pid < 0 && errno == EINTR)) ::usleep(100 * 1000);
      if (pid < 0 && errno == ECHILD) points_.clear();
    }
    signal_all(SIGKILL);
    for (const auto& [pid, index] : points_) core::wait_for(pid);
  }
  void add(pid_t pid, int64_t index) { points_[pid] = index; }
  std::optional<int64_t> take(pid_t pid) {
    const auto it = points_.find(pid);
    if (it == points_.end()) return std::nullopt;
    const int64_t index = it->second;
    points_.erase(it);
    return index;
  }
  void signal_all(int signal) const {
    for (const auto& [pid, index] : points_) ::kill(pid, signal);
  }
  void forget_all() { points_.clear(); }
  bool empty() const { return points_.empty(); }
  size_t size() const { return points_.size(); }

 private:
  std::map<pid_t, int64_t> points_;
};

void start_point(const SweepPlan& plan, const std::vector<std::vector<std::string>>& points,
                 int64_t index, int jobs, RunningPoints& running) {
  const auto& point = points[index];
  core::ChildOptions options;
  options.hold_signals = true;
  options.own_group = true;
  if (jobs > 1) options.log = plan.dir / "logs" / (std::to_string(index) + ".log");
  running.add(core::start_program("/proc/self/exe", train_args(plan, point, index), options),
              index);
  std::string sets;
  for (const auto& set : point) sets += (sets.empty() ? "" : " ") + set;
  spdlog::info("sweep: point {} of {} started ({}){}", index, points.size(), sets,
               options.log ? ", log " + options.log->string() : std::string());
}

// A re-run of the sweep (or a task that SLURM starts again) leaves a finished point alone, even
// one without a checkpoint to resume from.
bool finished_already(const std::filesystem::path& dir) {
  if (!is_run_folder(dir)) return false;
  try {
    return read_run(dir).state == "finished";
  } catch (const std::exception&) {
    return false;  // unreadable: trained again, which rewrites its files
  }
}

}  // namespace

GridAxis parse_grid_axis(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) bad_axis(spec, "no key=values");
  GridAxis axis{spec.substr(0, eq), {}};
  std::string value;
  int depth = 0;
  bool in_quotes = false;
  for (size_t i = eq + 1; i <= spec.size(); ++i) {
    const char c = i < spec.size() ? spec[i] : ',';
    if (c == '"' && (i == 0 || spec[i - 1] != '\\')) in_quotes = !in_quotes;
    if (!in_quotes && (c == '[' || c == '{')) ++depth;
    if (!in_quotes && (c == ']' || c == '}')) --depth;
    if (c == ',' && depth == 0 && !in_quotes) {
      if (value.empty()) bad_axis(spec, "an empty value");
      axis.values.push_back(value);
      value.clear();
    } else {
      value += c;
    }
  }
  if (depth != 0 || in_quotes) bad_axis(spec, "unbalanced brackets or quotes");
  return axis;
}

std::vector<std::vector<std::string>> grid_points(const std::vector<GridAxis>& axes) {
  std::vector<std::vector<std::string>> points = {{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> longer;
    for (const auto& point : points) {
      for (const auto& value : axis.values) {
        longer.push_back(point);
        longer.back().push_back(axis.key + "=" + value);
      }
    }
    points = std::move(longer);
  }
  return points;
}

void prepare_sweep_folder(const SweepPlan& plan) {
  core::ensure_own_folder(plan.dir, "the sweep folder");
  const auto file = plan.dir / "sweep.json";
  const nlohmann::json wanted = to_json(plan);
  const core::FileLock lock(plan.dir / ".lock", core::FileLock::Mode::kWait);
  if (!std::filesystem::exists(file)) {
    core::write_file_atomic(file, wanted.dump(2) + "\n");
    return;
  }
  nlohmann::json there;
  try {
    there = config::parse_json(core::read_regular_file(file));
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(core::ErrorCode::kIo, file.string() + ": " + config::plain_json_error(e),
                      "choose another --output for the sweep");
  }
  if (there != wanted) {
    throw core::Error(core::ErrorCode::kUsage,
                      plan.dir.string() +
                          " holds another sweep (its sweep.json states another "
                          "config, --set or --grid)",
                      "choose another --output, or repeat that sweep's own options");
  }
}

int run_points(const SweepPlan& plan, const std::vector<int64_t>& indices, int jobs) {
  const auto points = grid_points(plan.axes);
  if (jobs > 1) core::ensure_own_folder(plan.dir / "logs", "the sweep's log folder");
  RunningPoints running;
  int first_failure = 0;
  bool interrupt_passed = false, notice_passed = false;
  size_t next = 0;
  while (next < indices.size() || !running.empty()) {
    const bool stopping = core::preemption_requested() || core::interrupt_requested();
    while (!stopping && next < indices.size() && static_cast<int>(running.size()) < jobs) {
      const int64_t i = indices[next++];
      if (finished_already(plan.dir / std::to_string(i))) {
        spdlog::info("sweep: point {} finished already", i);
        continue;
      }
      start_point(plan, points, i, jobs, running);
    }
    // Passed on once each: the points run in process groups of their own (a terminal's Ctrl-C
    // reaches the sweep alone), and a point's second SIGINT would kill it outright.
    if (!interrupt_passed && core::interrupt_requested()) {
      running.signal_all(SIGINT);
      interrupt_passed = true;
    }
    if (!notice_passed && core::preemption_requested()) {
      running.signal_all(SIGUSR1);
      notice_passed = true;
    }
    if (running.empty()) break;
    // Polled, so that a notice is passed on while the points run.
    int raw = 0;
    const pid_t pid = ::waitpid(-1, &raw, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      ::usleep(100 * 1000);
      continue;
    }
    if (pid < 0) {  // no child left to wait for: none of ours can still run
      running.forget_all();
      break;
    }
    const auto index = running.take(pid);
    if (!index) continue;
    const int status = core::exit_status_of(raw);
    spdlog::info("sweep: point {} ended with status {}", *index, status);
    if (status != 0 && first_failure == 0) first_failure = status;
    if (indices.size() > 1) write_sweep_table(plan.dir, points.size());  // as points end
  }
  if (first_failure == 0 && next < indices.size()) {
    first_failure = core::preemption_requested() ? 75 : 130;
  }
  return first_failure;
}

namespace {

std::string write_table(const std::filesystem::path& dir, size_t points) {
  const core::FileLock lock(dir / ".lock", core::FileLock::Mode::kWait);
  std::vector<RunView> runs;
  for (size_t i = 0; i < points; ++i) {
    if (is_run_folder(dir / std::to_string(i))) runs.push_back(read_run(dir / std::to_string(i)));
  }
  if (runs.empty()) return "";
  const Table table = compare_runs(runs);
  std::string markdown = format_table(table, TableFormat::kMarkdown);
  if (runs.size() < points) {
    markdown += "\n" + std::to_string(points - runs.size()) + " of " + std::to_string(points) +
                " points not started yet.\n";
  }
  core::write_file_atomic(dir / "compare.md", markdown);
  return format_table(table, TableFormat::kText);
}

}  // namespace

std::string write_sweep_table(const std::filesystem::path& dir, size_t points) {
  try {
    return write_table(dir, points);
  } catch (const core::Error& e) {
    spdlog::warn("the sweep's table: {} ({})", e.what(), e.hint());
  } catch (const std::exception& e) {  // the file system's own errors
    spdlog::warn("the sweep's table: {}", e.what());
  }
  return "";
}

}  // namespace dptrain::runs
