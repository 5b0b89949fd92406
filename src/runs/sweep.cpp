#include "runs/sweep.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "config/json_text.h"
#include "core/child_process.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/interrupt.h"
#include "runs/compare.h"
#include "runs/run_folder.h"

namespace dptrain::runs {
namespace {

[[noreturn]] void bad_axis(const std::string& spec, const std::string& what) {
  throw core::Error(core::ErrorCode::kUsage, "--grid " + spec + ": " + what,
                    "write --grid key.path=value1,value2 (a value with commas in brackets or "
                    "quotes: --grid 'parallel.devices=[\"cpu\"],[\"cpu\",\"cpu\"]')");
}

nlohmann::json to_json(const SweepPlan& plan) {
  nlohmann::json grid = nlohmann::json::array();
  for (const auto& axis : plan.axes) grid.push_back({{"key", axis.key}, {"values", axis.values}});
  return {{"config", plan.config ? nlohmann::json(plan.config->string()) : nlohmann::json()},
          {"sets", plan.sets},
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

// Closes the lock file, and with it the lock, on every way out.
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& file)
      : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)) {
    int locked = -1;
    if (fd_ >= 0) {
      do {  // a preemption notice interrupts the wait; the lock is still wanted
        locked = ::flock(fd_, LOCK_EX);
      } while (locked != 0 && errno == EINTR);
    }
    if (locked != 0) {
      const std::string why = std::strerror(errno);
      if (fd_ >= 0) ::close(fd_);
      throw core::Error(core::ErrorCode::kIo, file.string() + ": cannot lock: " + why,
                        "check that the sweep folder is writable");
    }
  }
  ~FolderLock() { ::close(fd_); }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

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
  FolderLock lock(plan.dir / ".lock");
  if (!std::filesystem::exists(file)) {
    core::write_file_atomic(file, wanted.dump(2) + "\n");
    return;
  }
  nlohmann::json there;
  try {
    there = config::parse_json(core::read_text_file(file));
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
  std::map<pid_t, int64_t> running;
  int first_failure = 0;
  bool forwarded = false;
  size_t next = 0;
  while (next < indices.size() || !running.empty()) {
    const bool stopping = core::preemption_requested() || core::interrupt_requested();
    while (!stopping && next < indices.size() && static_cast<int>(running.size()) < jobs) {
      const int64_t i = indices[next++];
      core::ChildOptions options;
      options.hold_signals = true;
      if (jobs > 1) options.log = plan.dir / "logs" / (std::to_string(i) + ".log");
      const pid_t pid =
          core::start_program("/proc/self/exe", train_args(plan, points[i], i), options);
      running[pid] = i;
      std::string sets;
      for (const auto& set : points[i]) sets += (sets.empty() ? "" : " ") + set;
      spdlog::info("sweep: point {} of {} started ({}){}", i, points.size(), sets,
                   options.log ? ", log " + options.log->string() : std::string());
    }
    if (stopping && !forwarded && core::preemption_requested()) {
      for (const auto& [pid, i] : running) ::kill(pid, SIGUSR1);
      forwarded = true;
    }
    if (running.empty()) break;
    // Polled, so that a notice is passed on while the points run.
    int raw = 0;
    const pid_t pid = ::waitpid(-1, &raw, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      ::usleep(100 * 1000);
      continue;
    }
    if (pid < 0) break;
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const int status = core::exit_status_of(raw);
    spdlog::info("sweep: point {} ended with status {}", it->second, status);
    if (status != 0 && first_failure == 0) first_failure = status;
    running.erase(it);
  }
  if (first_failure == 0 && next < indices.size()) {
    first_failure = core::preemption_requested() ? 75 : 130;
  }
  return first_failure;
}

std::string write_sweep_table(const std::filesystem::path& dir, size_t points) {
  FolderLock lock(dir / ".lock");
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

}  // namespace dptrain::runs
