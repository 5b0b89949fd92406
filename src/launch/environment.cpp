#include "launch/environment.h"

#include <cstdlib>

#include "core/error.h"
#include "launch/nodelist.h"

namespace dptrain::launch {
namespace {

using core::Error;
using core::ErrorCode;

// Reads the variables of one launcher, naming it and the variable in every complaint.
class LauncherVars {
 public:
  LauncherVars(const EnvLookup& env, std::string launcher)
      : env_(env), launcher_(std::move(launcher)) {}

  bool has(const std::string& name) const { return env_(name).has_value(); }
  std::optional<std::string> text(const std::string& name) const { return env_(name); }

  int64_t integer(const std::string& name, int64_t min, int64_t max) const {
    const auto value = env_(name);
    if (!value) fail(name + " is not set", "the launcher sets it; check how this rank was started");
    size_t used = 0;
    int64_t parsed = 0;
    try {
      parsed = std::stoll(*value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value->size()) {
      fail(name + "=\"" + *value + "\" is not a whole number", "check the launcher's settings");
    }
    if (parsed < min || parsed > max) {
      fail(name + "=" + *value + " is out of range: must be " + std::to_string(min) + " to " +
               std::to_string(max),
           "check the launcher's settings");
    }
    return parsed;
  }

  int64_t integer_or(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
    return has(name) ? integer(name, min, max) : fallback;
  }

  [[noreturn]] void fail(const std::string& what, const std::string& hint) const {
    throw Error(ErrorCode::kDistributed, launcher_ + ": " + what, hint);
  }

 private:
  const EnvLookup& env_;
  std::string launcher_;
};

constexpr int64_t kMaxWorld = 1 << 20;
constexpr int64_t kMaxRestarts = 1 << 20;

// The checks every launcher's numbers must pass, whoever set them.
void check_ranks(const LauncherVars& vars, const RankInfo& info, const std::string& rank_var,
                 const std::string& world_var) {
  if (info.rank >= info.world_size) {
    vars.fail(rank_var + "=" + std::to_string(info.rank) + " is not below " + world_var + "=" +
                  std::to_string(info.world_size),
              "ranks count from 0 to the world size minus 1");
  }
  if (info.local_rank >= info.local_world_size) {
    vars.fail("local rank " + std::to_string(info.local_rank) + " is not below the " +
                  std::to_string(info.local_world_size) + " ranks of its node",
              "check the launcher's processes per node");
  }
}

void read_master(const LauncherVars& vars, RankInfo& info, const std::string& default_addr,
                 std::optional<uint16_t> default_port) {
  const auto addr = vars.text("MASTER_ADDR");
  if (!addr && default_addr.empty()) {
    vars.fail("MASTER_ADDR is not set", "export MASTER_ADDR=<rank 0's host> to every rank");
  }
  info.master_addr = addr ? *addr : default_addr;
  if (vars.has("MASTER_PORT") || !default_port) {
    info.master_port = static_cast<uint16_t>(vars.integer("MASTER_PORT", 1, 65535));
  } else {
    info.master_port = *default_port;
  }
}

RankInfo from_torchrun(const EnvLookup& env) {
  const LauncherVars vars(env, "torchrun");
  RankInfo info;
  info.launcher = env("DPTRAIN_LAUNCHER").value_or("torchrun");  // dptrain's own spawn says so
  info.world_size = static_cast<int>(vars.integer("WORLD_SIZE", 1, kMaxWorld));
  info.rank = static_cast<int>(vars.integer("RANK", 0, kMaxWorld));
  info.local_world_size =
      static_cast<int>(vars.integer_or("LOCAL_WORLD_SIZE", info.world_size, 1, kMaxWorld));
  info.local_rank = static_cast<int>(vars.integer_or("LOCAL_RANK", info.rank, 0, kMaxWorld));
  info.node_rank = static_cast<int>(vars.integer_or("GROUP_RANK", 0, 0, kMaxWorld));
  check_ranks(vars, info, "RANK", "WORLD_SIZE");
  read_master(vars, info, "", std::nullopt);
  const auto agent_store = vars.text("TORCHELASTIC_USE_AGENT_STORE");
  info.store_served_by_launcher = agent_store && (*agent_store == "True" || *agent_store == "1");
  info.restart_count = static_cast<int>(vars.integer_or(
      "TORCHELASTIC_RESTART_COUNT", vars.integer_or("DPTRAIN_RESTART_COUNT", 0, 0, kMaxRestarts), 0,
      kMaxRestarts));
  // torchrun's run id is "none" unless given: its port tells its jobs on one machine apart.
  info.job_id = env("DPTRAIN_JOB_ID")
                    .value_or(env("TORCHELASTIC_RUN_ID").value_or("none") + "-" +
                              std::to_string(info.master_port));
  return info;
}

RankInfo from_open_mpi(const EnvLookup& env) {
  const LauncherVars vars(env, "mpirun");
  RankInfo info;
  info.launcher = "mpirun";
  info.world_size = static_cast<int>(vars.integer("OMPI_COMM_WORLD_SIZE", 1, kMaxWorld));
  info.rank = static_cast<int>(vars.integer("OMPI_COMM_WORLD_RANK", 0, kMaxWorld));
  info.local_world_size = static_cast<int>(
      vars.integer_or("OMPI_COMM_WORLD_LOCAL_SIZE", info.world_size, 1, kMaxWorld));
  info.local_rank =
      static_cast<int>(vars.integer_or("OMPI_COMM_WORLD_LOCAL_RANK", info.rank, 0, kMaxWorld));
  info.node_rank = info.rank / info.local_world_size;  // mpirun's default by-slot mapping
  check_ranks(vars, info, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  // Each mpirun starts a job of its own id, the same in all its ranks: Open MPI 4 says it, 5 names
  // its PMIx namespace.
  uint16_t port = 29500;
  if (vars.has("OMPI_MCA_ess_base_jobid")) {
    const int64_t id = vars.integer("OMPI_MCA_ess_base_jobid", 0, INT64_MAX);
    info.job_id = std::to_string(id);
    port = port_for_job(id);
  } else if (const auto space = vars.text("PMIX_NAMESPACE")) {
    info.job_id = *space;
  }
  // One node: every rank finds rank 0 on this machine; several need MASTER_ADDR (mpirun -x).
  read_master(vars, info, info.one_machine() ? "127.0.0.1" : "", port);
  return info;
}

RankInfo from_slurm(const EnvLookup& env) {
  const LauncherVars vars(env, "slurm");
  RankInfo info;
  info.launcher = "slurm";
  info.world_size = static_cast<int>(vars.integer("SLURM_NTASKS", 1, kMaxWorld));
  info.rank = static_cast<int>(vars.integer("SLURM_PROCID", 0, kMaxWorld));
  info.local_rank = static_cast<int>(vars.integer_or("SLURM_LOCALID", 0, 0, kMaxWorld));
  info.node_rank = static_cast<int>(vars.integer_or("SLURM_NODEID", 0, 0, kMaxWorld));
  info.local_world_size = info.world_size;
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    if (const auto list = vars.text(name)) {
      const std::vector<int> counts = expand_tasks_per_node(*list);
      if (static_cast<size_t>(info.node_rank) < counts.size()) {
        info.local_world_size = counts[static_cast<size_t>(info.node_rank)];
      }
      break;
    }
  }
  check_ranks(vars, info, "SLURM_PROCID", "SLURM_NTASKS");
  std::string first_host;
  for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (const auto list = vars.text(name)) {
      first_host = expand_nodelist(*list).at(0);
      break;
    }
  }
  std::optional<uint16_t> port;
  if (vars.has("SLURM_JOB_ID")) {
    const int64_t id = vars.integer("SLURM_JOB_ID", 0, INT64_MAX);
    port = port_for_job(id);
    info.job_id = std::to_string(id) + "." +
                  vars.text("SLURM_STEP_ID").value_or(vars.text("SLURM_STEPID").value_or("0"));
  }
  read_master(vars, info, first_host, port);
  info.restart_count = static_cast<int>(vars.integer_or("SLURM_RESTART_COUNT", 0, 0, kMaxRestarts));
  return info;
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

std::optional<RankInfo> detect_launcher(const EnvLookup& env) {
  if (env("RANK") || env("WORLD_SIZE")) return from_torchrun(env);
  if (env("OMPI_COMM_WORLD_RANK") || env("OMPI_COMM_WORLD_SIZE")) return from_open_mpi(env);
  // Outside an srun step (the batch script itself, an salloc shell) SLURM's variables describe the
  // job, not this process: only one process runs there, and it must not wait for the others.
  if (env("SLURM_PROCID") && (env("SLURM_STEP_ID") || env("SLURM_STEPID"))) {
    return from_slurm(env);
  }
  return std::nullopt;
}

uint16_t port_for_job(int64_t job_id) {
  return static_cast<uint16_t>(15000 + job_id % 14000);
}

std::string describe(const RankInfo& info) {
  return "rank " + std::to_string(info.rank) + " of " + std::to_string(info.world_size) +
         " (node " + std::to_string(info.node_rank) + ", local rank " +
         std::to_string(info.local_rank) + ") from " + info.launcher +
         (info.restart_count > 0 ? ", restart " + std::to_string(info.restart_count) : "");
}

}  // namespace dptrain::launch
