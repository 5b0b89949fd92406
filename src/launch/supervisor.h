// dptrain's child processes, started and watched in one place: the launcher's ranks, the sweep's
// points and gnuplot. Starting one blocks the signals dptrain acts on across fork, so that a
// notice that reaches the child before exec is not lost; a child can get its own process group
// (a terminal's Ctrl-C then reaches dptrain alone, which passes it on once) and die with dptrain
// (PR_SET_PDEATHSIG), and can hold those signals across exec until its own handlers are in
// (core/interrupt.h). Arguments go to exec as they are: no shell reads them. What to do when a
// child ends (restart ranks, start the next point) stays with the caller.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dptrain::launch {

struct ChildSpec {
  std::string program;            // a path (holding a '/'), or a name searched in PATH
  std::vector<std::string> argv;  // argv[0] included
  // The whole environment ("NAME=value" each); none: this process's.
  std::optional<std::vector<std::string>> environment;
  std::optional<std::filesystem::path> log;  // stdout and stderr appended there (never a link)
  bool quiet_stdout = false;                 // stdout to /dev/null
  // A process group of its own, killed when dptrain dies (even by SIGKILL).
  bool own_group = false;
  // The signals a dptrain child acts on (Ctrl-C, preemption notices) stay blocked across exec
  // until its handlers are in: one sent early must not kill it outright.
  bool hold_signals = false;
};

// Starts the child; an Error naming the program when it cannot be started. A program that is not
// there exits with 127.
pid_t start_child(const ChildSpec& spec);

// `program` with `args`, as a shell would run it (argv[0] is the program).
ChildSpec program_spec(const std::string& program, const std::vector<std::string>& args);

// A finished child's exit status; 128 + N for one killed by signal N, as a shell says.
int exit_status_of(int wait_status);

// Waits for `pid`, through signals; its exit status.
int wait_for(pid_t pid);

// The children running, each with the caller's id for it (a rank, a point's index). Polled, so
// that the caller can pass signals on between reaps.
class Children {
 public:
  struct Ended {
    int64_t id = 0;
    pid_t pid = 0;
    int raw_status = 0;  // waitpid's
  };

  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  Children(Children&&) = default;
  Children& operator=(Children&&) = default;

  void add(pid_t pid, int64_t id) { running_[pid] = id; }
  bool empty() const { return running_.empty(); }
  size_t size() const { return running_.size(); }
  // The ids of the children still running, in order.
  std::vector<int64_t> ids() const;
  void signal_all(int signal_number) const;
  // A child that has ended, if any, without waiting. Nothing also when this process can wait for
  // no child at all (`lost()` says so: one reaped elsewhere); the children still listed then
  // ended unseen, and forget() hands them over.
  std::optional<Ended> reap();
  bool lost() const { return lost_; }
  std::map<pid_t, int64_t> forget();
  // Sends `signal_number` to every child, waits up to `grace` for them to end, then kills those
  // left (SIGKILL) and waits for them: none is left a zombie.
  void stop_all(int signal_number, std::chrono::milliseconds grace);

 private:
  std::map<pid_t, int64_t> running_;
  bool lost_ = false;
};

}  // namespace dptrain::launch
