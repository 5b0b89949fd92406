// Launching ddp's local ranks when no launcher (torchrun, srun, mpirun) started this process.
#include <chrono>
#include <cmath>

#include "app/command_line.h"
#include "app/commands.h"
#include "config/load.h"
#include "core/error.h"
#include "core/log.h"
#include "launch/environment.h"
#include "launch/launcher.h"
#include "model/registry.h"
#include "parallel/devices.h"
#include "train/session.h"

namespace dptrain::app {
void usage_error(const std::string& what, const std::string& hint) {
  throw core::Error(core::ErrorCode::kUsage, what, hint);
}

namespace {

// Restarts resume from the run's checkpoints, so they need to know where those are, and there must
// be checkpoints to resume from.
int max_restarts(const cli::Command& command, const config::Config& config) {
  const int restarts =
      command.max_restarts.value_or(static_cast<int>(config.parallel.max_restarts));
  if (restarts == 0) return 0;
  if (command.nodes.nnodes > 1) {
    usage_error(
        "restarts (--max-restarts, parallel.max_restarts) are for one machine: with "
        "--nnodes " +
            std::to_string(command.nodes.nnodes) +
            " every node's ranks would have to restart together",
        "across machines let the scheduler restart the job: torchrun --max_restarts, or "
        "SLURM's requeue (see docs/checkpoints.md, Restarts after a failure)");
  }
  if (!command.output_dir) {
    usage_error("restarts resume from the run's checkpoints, but there is no --output",
                "give the run's folder with --output");
  }
  if (config.checkpoint.every_epochs == 0 && config.checkpoint.every_steps == 0) {
    throw core::Error(core::ErrorCode::kConfig,
                      "parallel.max_restarts: restarts resume from the newest checkpoint, but "
                      "checkpoint.every_epochs and checkpoint.every_steps are both 0: every "
                      "restart would start over from the first epoch",
                      "set checkpoint.every_epochs (1 is its default) or checkpoint.every_steps, "
                      "or leave restarts out");
  }
  return restarts;
}

int launch_ranks(const cli::Command& command, const config::Config& config, int local_ranks,
                 const std::vector<std::string>& argv, Purpose purpose) {
  const cli::MultiNode& nodes = command.nodes;
  if (nodes.node_rank >= nodes.nnodes) {
    usage_error("--node-rank " + std::to_string(nodes.node_rank) + " is not below --nnodes " +
                    std::to_string(nodes.nnodes),
                "machines count from 0 to --nnodes minus 1");
  }
  if (nodes.nnodes > 1 && (nodes.master_addr.empty() || nodes.master_port == 0)) {
    usage_error(
        "--nnodes " + std::to_string(nodes.nnodes) + " needs --master-addr and --master-port",
        "give every machine machine 0's address and a free port on it");
  }
  // A batch that does not split over the ranks fails here, before any rank starts; so does a
  // device this machine lacks (a GPU config on a CPU-only machine), which each rank would report
  // on its own, and the launcher as ranks that never reached the rendezvous.
  train::per_rank_batch(config.data.batch_size, nodes.nnodes * local_ranks);
  for (int local = 0; local < local_ranks; ++local) {
    parallel::device_for_local_rank(config.parallel.devices, local,
                                    nodes.node_rank * local_ranks + local);
  }
  launch::LocalLaunch plan;
  plan.local_ranks = local_ranks;
  plan.nnodes = nodes.nnodes;
  plan.node_rank = nodes.node_rank;
  plan.master_addr = nodes.master_addr;
  plan.master_port = static_cast<uint16_t>(nodes.master_port);
  plan.timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::ceil(config.parallel.timeout_s * 1000)));  // never 0 ms;
  if (purpose == Purpose::kTrain) {
    plan.max_restarts = max_restarts(command, config);
    plan.restart_argv = resuming(argv);
  }
  return launch::run_local_ranks(argv, plan);
}

}  // namespace

std::optional<int> launch_ranks_if_needed(const cli::Command& command, const config::Config& config,
                                          const std::vector<std::string>& argv, Purpose purpose) {
  if (launch::detect_launcher(launch::process_environment())) return std::nullopt;
  if (config.parallel.backend != config::Backend::kDdp) return std::nullopt;
  const int local_ranks = parallel::local_rank_count(config.parallel.devices);
  if (local_ranks <= 1 && command.nodes.nnodes <= 1) return std::nullopt;
  core::init_logging(config::name_of(config.log.level));
  return launch_ranks(command, config, local_ranks, argv, purpose);
}

}  // namespace dptrain::app
