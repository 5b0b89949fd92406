// dptrain's own launcher, for ddp without torchrun, srun or mpirun: starts one copy of this program
// per local rank with torchrun's environment variables, serves the rendezvous store (on the first
// node), forwards SIGINT, SIGTERM and SIGUSR1, and when a rank fails stops the others promptly and
// reports which rank failed and how. Ranks run in their own process group and die with the
// launcher.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::launch {

struct LocalLaunch {
  int local_ranks = 1;  // processes on this machine: ranks node_rank * local_ranks + 0, 1, ...
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;   // empty: one node, 127.0.0.1
  uint16_t master_port = 0;  // 0 on one node: a free port
  std::chrono::milliseconds timeout{600000};
  // After a rank fails, how long the others get to stop (as on Ctrl-C) before SIGKILL.
  std::chrono::milliseconds grace{5000};
  // When a rank fails (one node only): stop every rank and start them all again with
  // `restart_argv` (which resumes from the newest checkpoint), up to this many times. Each start
  // sees its count in DPTRAIN_RESTART_COUNT.
  int max_restarts = 0;
  std::vector<std::string> restart_argv;
};

// Runs `argv` (this program's own command line) as the local ranks and waits for them. Returns 0
// when all succeed; else, once the restarts are spent, the status of the rank that failed first
// (its exit status, or 128 + the signal that killed it, as a shell reports it), having logged which
// rank it was and every restart's cause.
int run_local_ranks(const std::vector<std::string>& argv, const LocalLaunch& launch);

}  // namespace dptrain::launch
