// `dptrain train`: resolve the experiment, launch ddp's ranks when nobody else does, else train
// here as the launcher's rank (or alone).
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>

#include "app/commands.h"
#include "config/idle_keys.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "dist/rendezvous.h"
#include "train/checkpoint.h"
#include "train/checkpoint_file.h"
#include "train/run_dir.h"
#include "train/trainer.h"

namespace dptrain::app {
namespace {

// The checkpoint --resume names: a file, or for "auto" the newest in the run's checkpoint folder
// (none there: a fresh start, so that one command serves a job's first run and its requeues),
// which must be of the folder's own run. Rank 0's to decide.
std::optional<std::filesystem::path> resume_point(const cli::Command& command,
                                                  const config::Config& config,
                                                  const train::RunFolder& folder) {
  if (!command.resume) return std::nullopt;
  if (*command.resume != "auto") {
    const std::filesystem::path path = *command.resume;
    if (!std::filesystem::is_regular_file(path)) {
      throw core::Error(core::ErrorCode::kIo, path.string() + ": no such checkpoint",
                        "give a file from a run's checkpoints folder, or --resume auto");
    }
    return path;
  }
  const std::filesystem::path dir = train::checkpoint_dir(config, folder.dir, folder.run_id);
  auto latest = train::latest_checkpoint(dir);
  if (!latest) {
    spdlog::info("--resume auto: no checkpoint in {}; starting from the beginning", dir.string());
    return std::nullopt;
  }
  const std::string run = train::checkpoint_run_id(*latest);
  if (run != folder.run_id) {
    throw core::Error(core::ErrorCode::kIo,
                      latest->string() + ": a checkpoint of run " + run + ", not of run " +
                          folder.run_id + " that " + folder.dir.string() + " holds",
                      "remove it, or resume it by name (--resume " + latest->string() +
                          ") into a folder of its own");
  }
  return latest;
}

// How rank 0 opens the output folder: --resume goes on with the run there (--overwrite then
// removes nothing), --overwrite replaces it, else it must hold no run.
train::RunStart run_start(const cli::Command& command) {
  if (command.resume) return train::RunStart::kResume;
  return command.overwrite ? train::RunStart::kOverwrite : train::RunStart::kNew;
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
  if (command.max_restarts && rank.launcher != "dptrain") {
    usage_error("--max-restarts restarts the ranks that dptrain's launcher starts, and " +
                    (launched ? rank.launcher + " started this one"
                              : std::string("this run has no ranks to launch (one device)")),
                launched ? "let " + rank.launcher + " restart it" : "leave it out");
  }
  if (rank.rank == 0) {
    for (const std::string& warning : config::idle_key_warnings(config, rank.launcher)) {
      spdlog::warn("{}", warning);
    }
  }
  core::install_interrupt_handler();
  core::install_preemption_handler();
  core::release_launcher_signals();  // a notice that came while this rank started acts now
  // A peer that dies mid-collective must surface as Gloo's error naming the collective, not as
  // a SIGPIPE killing this rank silently when Gloo writes to its socket (Python ignores SIGPIPE
  // too, so PyTorch's users see the same).
  std::signal(SIGPIPE, SIG_IGN);
  if (command.resume && *command.resume == "auto" && !command.output_dir) {
    usage_error("--resume auto looks for checkpoints in the run's folder, but there is no --output",
                "give the run's folder with --output");
  }
  train::Start start;  // rank 0 decides; the other ranks learn its choices (train/start_file.h)
  std::filesystem::path output;  // other ranks write nothing
  const bool output_existed = command.output_dir && std::filesystem::exists(*command.output_dir);
  if (rank.rank == 0) {
    const train::RunFolder folder =
        train::open_run_folder(command.output_dir, config, run_start(command));
    output = folder.dir;
    start.run_id = folder.run_id;
    start.resume = resume_point(command, config, folder);
    start.init_from = command.init_from;
  }
  try {
    train::train(config, output, std::cout, rank, start);
  } catch (...) {
    // A run that failed before writing anything (a rank that never arrived, a missing device)
    // leaves no empty folder behind.
    std::error_code ec;
    if (!output.empty() && !output_existed && std::filesystem::is_empty(output, ec)) {
      std::filesystem::remove(output, ec);
    }
    throw;
  }
  return 0;
}

}  // namespace

int run_train(const cli::Command& command, const std::vector<std::string>& argv) {
  const config::Config config = resolve(command);
  if (auto status = launch_ranks_if_needed(command, config, argv, Purpose::kTrain)) {
    return *status;
  }
  const auto launched = dist::detect_launcher(dist::process_environment());
  if (command.nodes.given && !launched && config.parallel.backend != config::Backend::kDdp) {
    usage_error("--nnodes, --node-rank, --master-addr and --master-port launch ddp ranks",
                "set parallel.backend to \"ddp\"");
  }
  return train_here(command, config, launched);
}

}  // namespace dptrain::app
