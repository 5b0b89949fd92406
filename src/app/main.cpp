// dptrain's entry: parse the command line, resolve the experiment, set up logging, run. The one
// place that catches every error: it logs what went wrong and a hint, and picks the exit status.
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "config/load.h"
#include "config/schema.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/torch_info.h"
#include "data/locate.h"
#include "dist/launcher.h"
#include "dist/rendezvous.h"
#include "model/registry.h"
#include "parallel/devices.h"
#include "train/checkpoint.h"
#include "train/run_dir.h"
#include "train/trainer.h"

namespace {

using namespace dptrain;

config::Config resolve(const cli::Command& command) {
  return config::load_config(command.config_file, command.overrides, model::model_names());
}

// Where the default lookup finds a data set; scripts read this line instead of repeating the rule.
std::string data_line(const std::string& dataset) {
  std::string where;
  try {
    where = data::locate_data_dir("", dataset).string();
  } catch (const core::Error&) {
    where = "not found (see data/README.md)";
  }
  return "data " + dataset + ": " + where + "\n";
}

[[noreturn]] void usage_error(const std::string& what, const std::string& hint) {
  throw core::Error(core::ErrorCode::kUsage, what, hint);
}

// ddp with no launcher around: this process becomes the launcher of the local ranks.
int launch_ranks(const cli::Command& command, const config::Config& config, int local_ranks,
                 const std::vector<std::string>& argv) {
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
  // A batch that does not split over the ranks fails here, before any rank starts.
  train::per_rank_batch(config.data.batch_size, nodes.nnodes * local_ranks);
  dist::LocalLaunch launch;
  launch.local_ranks = local_ranks;
  launch.nnodes = nodes.nnodes;
  launch.node_rank = nodes.node_rank;
  launch.master_addr = nodes.master_addr;
  launch.master_port = static_cast<uint16_t>(nodes.master_port);
  launch.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.parallel.timeout_s * 1000));
  return dist::run_local_ranks(argv, launch);
}

// The checkpoint --resume names: a file, or for "auto" the newest in the run's checkpoint folder
// (none there: a fresh start, so that one command serves a job's first run and its requeues).
std::optional<std::filesystem::path> resume_point(const cli::Command& command,
                                                  const config::Config& config) {
  if (!command.resume) return std::nullopt;
  if (*command.resume != "auto") {
    const std::filesystem::path path = *command.resume;
    if (!std::filesystem::is_regular_file(path)) {
      throw core::Error(core::ErrorCode::kIo, path.string() + ": no such checkpoint",
                        "give a file from a run's checkpoints folder, or --resume auto");
    }
    return path;
  }
  if (!command.output_dir && config.checkpoint.dir.empty()) {
    usage_error("--resume auto looks for checkpoints in the run's folder, but there is no --output",
                "give the run's folder with --output (or set checkpoint.dir)");
  }
  const std::filesystem::path dir =
      train::checkpoint_dir(config, command.output_dir.value_or(std::filesystem::path()));
  auto latest = train::latest_checkpoint(dir);
  if (!latest)
    spdlog::info("--resume auto: no checkpoint in {}; starting from the beginning", dir.string());
  return latest;
}

int train_here(const cli::Command& command, const config::Config& config,
               const std::optional<dist::RankInfo>& launched) {
  if (launched && command.nodes.given && launched->launcher != "dptrain") {
    usage_error(
        "--nnodes, --node-rank, --master-addr and --master-port are for dptrain's own "
        "launch, but " +
            launched->launcher + " started this process",
        "leave them out: " + launched->launcher + " decides the ranks");
  }
  const dist::RankInfo rank = launched.value_or(dist::RankInfo{});
  core::init_logging(config::name_of(config.log.level), rank.rank);
  core::install_interrupt_handler();
  core::install_preemption_handler();
  // A peer that dies mid-collective must surface as Gloo's error naming the collective, not as
  // a SIGPIPE killing this rank silently when Gloo writes to its socket (Python ignores SIGPIPE
  // too, so PyTorch's users see the same).
  std::signal(SIGPIPE, SIG_IGN);
  const std::optional<std::filesystem::path> resume = resume_point(command, config);
  std::filesystem::path output;  // other ranks write nothing
  if (rank.rank == 0) {
    // Resuming goes on in the folder that holds the run's results so far.
    output = train::make_run_dir(command.output_dir, config.name,
                                 command.overwrite || command.resume.has_value());
  }
  train::train(config, output, std::cout, rank, resume);
  return 0;
}

int run(const cli::Command& command, const std::vector<std::string>& argv) {
  switch (command.action) {
    case cli::Action::kInfo:
      std::cout << core::format_torch_info(core::torch_info()) << data_line("fashion-mnist");
      return 0;
    case cli::Action::kConfig:
      if (command.list_keys) {
        std::cout << config::key_table_markdown();
      } else {
        std::cout << config::to_json(resolve(command)).dump(2) << std::endl;
      }
      return 0;
    case cli::Action::kTrain: {
      const config::Config config = resolve(command);
      const auto launched = dist::detect_launcher(dist::process_environment());
      if (!launched && config.parallel.backend == config::Backend::kDdp) {
        const int local_ranks = parallel::local_rank_count(config.parallel.devices);
        if (local_ranks > 1 || command.nodes.nnodes > 1) {
          core::init_logging(config::name_of(config.log.level));
          return launch_ranks(command, config, local_ranks, argv);
        }
      }
      if (command.nodes.given && !launched && config.parallel.backend != config::Backend::kDdp) {
        usage_error("--nnodes, --node-rank, --master-addr and --master-port launch ddp ranks",
                    "set parallel.backend to \"ddp\"");
      }
      return train_here(command, config, launched);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  core::keep_freed_memory_for_reuse();
  const cli::ParseResult parsed = cli::parse_command_line(argc, argv);
  if (!parsed.command) return parsed.exit_status;
  try {
    core::init_logging("info");
    return run(*parsed.command, std::vector<std::string>(argv, argv + argc));
  } catch (const core::Error& e) {
    spdlog::error("{}: {}", core::code_name(e.code()), e.what());
    if (!e.hint().empty()) spdlog::error("hint: {}", e.hint());
    return core::exit_status(e.code());
  } catch (const c10::Error& e) {
    spdlog::error("LibTorch error: {}", e.what_without_backtrace());
    return core::exit_status(core::ErrorCode::kRuntime);
  } catch (const std::exception& e) {
    spdlog::error("unexpected error: {}", e.what());
    return core::exit_status(core::ErrorCode::kRuntime);
  }
}
