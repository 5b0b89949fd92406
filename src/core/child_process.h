// Other programs run from dptrain: gnuplot for `compare --plot`, and `dptrain train` for each
// point of a sweep. Arguments go to exec as they are: no shell reads them.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dptrain::core {

struct ChildOptions {
  std::optional<std::filesystem::path> log;  // stdout and stderr appended there (never a link)
  // A process group of its own, killed when dptrain dies (even by SIGKILL): a terminal's Ctrl-C
  // then reaches dptrain alone, which passes it on once (a second SIGINT kills a dptrain child).
  bool own_group = false;
  // The signals a dptrain child acts on (Ctrl-C, preemption notices) stay blocked across exec
  // until its handlers are in (core/interrupt.h): one sent early must not kill it outright.
  bool hold_signals = false;
};

// Starts `program` (searched in PATH unless it holds a '/') with `args`; an Error naming it when
// it cannot be started. A program that is not there exits with 127.
pid_t start_program(const std::string& program, const std::vector<std::string>& args,
                    const ChildOptions& options = {});

// A finished child's exit status; 128 + N for one killed by signal N, as a shell says.
int exit_status_of(int wait_status);

// Waits for `pid`, through signals; its exit status.
int wait_for(pid_t pid);

}  // namespace dptrain::core
