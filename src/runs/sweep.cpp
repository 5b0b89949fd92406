#include "runs/sweep.h"

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/file_lock.h"
#include "core/fs.h"
#include "core/interrupt.h"
#include "core/terminal.h"
#include "launch/supervisor.h"
#include "run/reader.h"
#include "runs/compare.h"
#include "runs/grid.h"
#include "runs/sweep_record.h"

namespace dptrain::runs {
namespace {

const char* const kPidFile = "sweep.pid";

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

// How long a point stopped as a preemption would be stopped (each writes a checkpoint and exits
// 75) gets before it is killed, when the sweep leaves by an exception.
constexpr std::chrono::seconds kStopGrace{30};

// Leaving run_points by an exception (a log that cannot be opened, no processes left) stops the
// points still running and waits for them: no point trains on unwatched, none is left a zombie.
struct StopPointsOnExit {
  launch::Children& points;
  ~StopPointsOnExit() { points.stop_all(SIGTERM, kStopGrace); }
};

std::filesystem::path point_log(const std::filesystem::path& dir, int64_t index) {
  return dir / "logs" / (std::to_string(index) + ".log");
}

// Starts point `index`, its stdout and stderr appended to its log; returns where in the log its
// lines begin (a re-run appends to the earlier run's).
uint64_t start_point(const SweepPlan& plan, const std::vector<std::vector<std::string>>& points,
                     int64_t index, launch::Children& running) {
  const auto& point = points[index];
  launch::ChildSpec spec = launch::program_spec("/proc/self/exe", train_args(plan, point, index));
  // The point's hints quote its argv[0] ("go on from there with: ..."): this binary's path, which
  // a shell runs, not /proc/self/exe, which is the shell's own.
  std::error_code own_error;
  const std::filesystem::path own = std::filesystem::read_symlink("/proc/self/exe", own_error);
  if (!own_error) spec.argv.front() = own.string();
  spec.hold_signals = true;
  spec.own_group = true;
  spec.log = point_log(plan.dir, index);
  std::error_code ec;
  const uintmax_t before = std::filesystem::file_size(*spec.log, ec);
  const int64_t threads = point_threads(plan, index);
  try {
    record_threads(plan.dir, index, threads);
  } catch (const std::exception& e) {  // a record: never the end of the points running
    spdlog::warn("could not record point {}'s thread count in sweep.json: {}", index, e.what());
  }
  running.add(launch::start_child(spec), index);
  std::string sets;
  for (const auto& set : point) sets += (sets.empty() ? "" : " ") + set;
  spdlog::info("sweep: point {} of {} started ({}), {} thread{}, log {}", index, points.size(),
               sets, threads, threads == 1 ? "" : "s", spec.log->string());
  return ec ? 0 : before;
}

// The lines of the point running alone, passed on from its log to stderr as they come, each
// after "[point <index>] ": a sweep's output then says which point each line is of. (A child has
// one place for its stdout and stderr, so its epoch lines reach the sweep's stderr too, and stdout
// keeps the sweep's table alone.)
class PointEcho {
 public:
  PointEcho(const std::filesystem::path& log, int64_t index, uint64_t from)
      : fd_(::open(log.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)),
        tag_("[point " + std::to_string(index) + "] "),
        offset_(from) {
    if (fd_ < 0) spdlog::warn("sweep: cannot follow {}: {}", log.string(), std::strerror(errno));
  }
  ~PointEcho() {
    if (fd_ >= 0) ::close(fd_);
  }
  PointEcho(const PointEcho&) = delete;
  PointEcho& operator=(const PointEcho&) = delete;

  // The whole lines written since; `ended`: the point's last line too, whole or not.
  void pass_on(bool ended) {
    char chunk[1 << 16];
    ssize_t n = 0;
    while (fd_ >= 0 && (n = ::pread(fd_, chunk, sizeof chunk, static_cast<off_t>(offset_))) > 0) {
      offset_ += static_cast<uint64_t>(n);
      pending_.append(chunk, static_cast<size_t>(n));
      size_t begin = 0;
      for (size_t end; (end = pending_.find('\n', begin)) != std::string::npos; begin = end + 1) {
        print(pending_.substr(begin, end - begin));
      }
      pending_.erase(0, begin);
      if (pending_.size() > sizeof chunk) {  // no line is that long: a progress bar, say
        print(pending_);
        pending_.clear();
      }
    }
    if (ended && !pending_.empty()) print(pending_);
    if (ended) pending_.clear();
  }

 private:
  void print(const std::string& line) const {
    std::cerr << tag_ << core::printable(line) << std::endl;
  }

  int fd_;
  std::string tag_;
  uint64_t offset_;
  std::string pending_;
};

// A re-run of the sweep (or a task that SLURM starts again) leaves a finished point alone, even
// one without a checkpoint to resume from.
bool finished_already(const std::filesystem::path& dir) {
  if (!run::is_run_folder(dir)) return false;
  try {
    return run::read_run(dir).finished();
  } catch (const std::exception&) {
    return false;  // unreadable: trained again, which rewrites its files
  }
}

// runtime.threads changes a point's results a little (float sums add up in another order), so a
// point resumed, or started, with another count than the sweep's points had before differs from
// what an uninterrupted sweep would have given: said, not refused (sweep.sbatch sets the count
// from --cpus-per-task, which a requeue may change). A point is compared with its own record, or
// one never started with every other point's, unless the grid sets runtime.threads itself.
void warn_of_thread_change(const SweepPlan& plan, const std::vector<int64_t>& indices) {
  const auto recorded = recorded_threads(read_sweep_file(plan.dir / "sweep.json"));
  const bool grid_sets_threads =
      std::any_of(plan.axes.begin(), plan.axes.end(),
                  [](const GridAxis& axis) { return axis.key == "runtime.threads"; });
  std::set<int64_t> counts, before, now;
  for (const auto& [index, count] : recorded) counts.insert(count);
  for (const int64_t index : indices) {
    if (finished_already(plan.dir / std::to_string(index))) continue;
    const int64_t threads = point_threads(plan, index);
    const auto own = recorded.find(std::to_string(index));
    const std::set<int64_t> compared = own != recorded.end() ? std::set<int64_t>{own->second}
                                       : grid_sets_threads   ? std::set<int64_t>{}
                                                             : counts;
    for (const int64_t count : compared) {
      if (count == threads) continue;
      before.insert(count);
      now.insert(threads);
    }
  }
  if (before.empty()) return;
  const auto listed = [](const std::set<int64_t>& values) {
    std::string text;
    for (const int64_t n : values) text += (text.empty() ? "" : " or ") + std::to_string(n);
    return text;
  };
  spdlog::warn(
      "sweep: points run now with {} threads, where sweep.json records {} for this sweep's points "
      "before: their results will differ a little from an uninterrupted sweep's (the thread count "
      "changes the order of float sums); to keep them equal, give the same --jobs as before (on "
      "SLURM, the same --cpus-per-task), or --set runtime.threads={}",
      listed(now), listed(before), *before.begin());
}

// Whether process `pid` runs the same executable as this one.
bool runs_this_program(pid_t pid) {
  std::error_code ec, own;
  const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  return !ec && exe == std::filesystem::read_symlink("/proc/self/exe", own) && !own;
}

// The pid in sweep.pid, when it names a dptrain that runs (a killed sweep leaves its own).
std::optional<pid_t> claiming_pid(const std::filesystem::path& dir) {
  try {
    const std::string text = core::read_regular_file(dir / kPidFile, /*max_bytes=*/32);
    pid_t pid = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), pid);
    // Named only when it is a dptrain (this very program): the file is anyone's to plant, and
    // the hint says to stop that process.
    if (error == std::errc() && end != text.data() && pid > 0 && runs_this_program(pid)) {
      return pid;
    }
  } catch (const core::Error&) {  // none, or unreadable: the message names no pid
  }
  return std::nullopt;
}

}  // namespace

SweepClaim::SweepClaim(const std::filesystem::path& dir) : dir_(dir) {
  core::ensure_own_folder(dir, "the sweep folder");
  lock_ = std::make_unique<const core::FileLock>(dir, core::FileLock::Mode::kTry);
  if (!lock_->held()) {
    const auto pid = claiming_pid(dir);
    const std::string named = pid ? std::to_string(*pid) : std::string("<pid in sweep.pid>");
    throw core::Error(core::ErrorCode::kIo,
                      dir.string() + ": another dptrain sweep runs there now (pid " + named + ")",
                      "wait for it to end, or stop it (kill -INT " + named +
                          "; running the same sweep again goes on where its points stopped), or "
                          "choose another --output");
  }
  // Written under the folder's file lock, as sweep.json and compare.md are: a temporary of any of
  // them found under that lock is a killed sweep's (prepare_sweep_folder).
  const core::FileLock files(dir / ".lock", core::FileLock::Mode::kWait);
  core::write_file_atomic(dir / kPidFile, std::to_string(::getpid()) + "\n");
}

SweepClaim::~SweepClaim() {
  std::error_code ec;
  std::filesystem::remove(dir_ / kPidFile, ec);
}

void prepare_sweep_folder(const SweepPlan& plan) {
  core::ensure_own_folder(plan.dir, "the sweep folder");
  const auto file = plan.dir / "sweep.json";
  const nlohmann::json wanted = to_json(plan);
  const core::FileLock lock(plan.dir / ".lock", core::FileLock::Mode::kWait);
  // Every writer of the folder's own files (sweep.json, compare.md, sweep.pid) holds this lock
  // while it writes: a temporary file found now is a killed writer's, whatever pid it names, even
  // beside job array tasks at work (their points' run folders, below, are theirs to clean).
  // Where the file system has no locks, only those of writers gone are certain to be stale.
  if (lock.enforced()) {
    core::remove_temporaries_in_locked_folder(plan.dir);
  } else {
    core::remove_stale_temporaries(plan.dir);
  }
  if (!std::filesystem::exists(file)) {
    core::write_file_atomic(file, wanted.dump(2) + "\n");
    return;
  }
  nlohmann::json there = read_sweep_file(file);
  if (there.is_object()) there.erase(kThreadsKey);  // a record beside the sweep's identity
  if (there != wanted) {
    throw core::Error(
        core::ErrorCode::kUsage,
        plan.dir.string() + " holds another sweep: " + sweep_difference(there, wanted),
        "choose another --output, or repeat that sweep's own options (its "
        "sweep.json states them)");
  }
}

namespace {

// When no child is left to wait for, none of ours can still run: a point whose folder says it
// finished did; any other failed, as a point does that exits badly, and the sweep goes on.
// Whether one failed.
bool failed_unseen(const SweepPlan& plan, launch::Children& running) {
  bool failed = false;
  for (const auto& [pid, index] : running.forget()) {
    if (finished_already(plan.dir / std::to_string(index))) continue;
    spdlog::error("sweep: point {} ended unseen (its exit status was lost)", index);
    failed = true;
  }
  return failed;
}

}  // namespace

int run_points(const SweepPlan& plan, const std::vector<int64_t>& indices, int jobs) {
  const auto points = grid_points(plan.axes);
  core::ensure_own_folder(plan.dir / "logs", "the sweep's log folder");
  warn_of_thread_change(plan, indices);
  launch::Children running;
  const StopPointsOnExit stop_on_exit{running};
  std::optional<PointEcho> echo;  // one point at a time: its lines, tagged, on stderr
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
      const uint64_t from = start_point(plan, points, i, running);
      if (jobs == 1) echo.emplace(point_log(plan.dir, i), i, from);
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
    const auto ended = running.reap();
    if (!ended) {
      if (echo) echo->pass_on(/*ended=*/running.lost());
      if (running.lost()) {
        if (failed_unseen(plan, running) && first_failure == 0) first_failure = 1;
        echo.reset();
        if (indices.size() > 1) write_sweep_table(plan.dir, points.size());
        continue;
      }
      ::usleep(100 * 1000);
      continue;
    }
    if (echo) echo->pass_on(/*ended=*/true);
    echo.reset();
    const int status = launch::exit_status_of(ended->raw_status);
    spdlog::info("sweep: point {} ended with status {}", ended->id, status);
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
  std::vector<run::RunView> runs;
  for (size_t i = 0; i < points; ++i) {
    if (run::is_run_folder(dir / std::to_string(i)))
      runs.push_back(run::read_run(dir / std::to_string(i)));
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
