// Who this process is in a multi-process job, read from the environment that the usual launchers
// set: torchrun, SLURM's srun, Open MPI's mpirun, or dptrain's own local spawn (which sets
// torchrun's variables). Pure functions over an environment lookup, so tests need no launcher.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace dptrain::launch {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr;  // empty: one process alone, no network rendezvous
  uint16_t master_port = 0;
  // The launcher already serves the rendezvous store at master_addr:master_port (torchrun's
  // TORCHELASTIC_USE_AGENT_STORE, and dptrain's local spawn), so rank 0 must not bind it too.
  bool store_served_by_launcher = false;
  std::string launcher = "none";  // torchrun | slurm | mpirun | dptrain | none
  // What tells this job from others on the same machines: SLURM's job and step ids, Open MPI's
  // job id, torchrun's run id with its port, dptrain's launcher's own; "none" alone.
  std::string job_id = "none";
  // How often the launcher has restarted the job's ranks (TORCHELASTIC_RESTART_COUNT from
  // torchrun, DPTRAIN_RESTART_COUNT from dptrain's own launcher, SLURM_RESTART_COUNT after a
  // requeue). Each restart is a new generation of ranks: their keys in a store that outlives them
  // (torchrun's agent store) must not meet the dead generation's.
  int restart_count = 0;

  // Whether every rank of the job runs on this machine.
  bool one_machine() const { return local_world_size == world_size; }
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// getenv, with an empty value counted as unset.
EnvLookup process_environment();

// The launcher's view of this process, or none when no launcher variables are set. Looks for
// torchrun's RANK/WORLD_SIZE first (torchrun may itself run under SLURM or MPI), then Open MPI,
// then SLURM inside an srun step. Bad values are distributed errors naming the variable.
std::optional<RankInfo> detect_launcher(const EnvLookup& env);

// The rendezvous port of a job across machines under SLURM or mpirun when MASTER_PORT is unset:
// 15000 + job id % 14000, the same on every node of the job, below Linux's ephemeral ports (from
// 32768) and torchrun's 29500, and different for jobs whose ids differ by less than 14000.
uint16_t port_for_job(int64_t job_id);

// "rank 1 of 4 (node 0, local rank 1) from torchrun": for logs.
std::string describe(const RankInfo& info);

}  // namespace dptrain::launch
