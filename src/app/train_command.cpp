// `dptrain train`: resolve the experiment, launch ddp's ranks when nobody else does, else train
// here as the launcher's rank (or alone).
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>

#include "app/command_line.h"
#include "app/commands.h"
#include "config/idle_keys.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "launch/environment.h"
#include "run/origin.h"
#include "train/trainer.h"

namespace dptrain::app {
namespace {

// Mistakes the command line alone shows, before any rank is launched.
void check_command_line(const cli::Command& command) {
  if (command.overwrite && command.resume && *command.resume != "auto") {
    usage_error(
        "--overwrite starts a new run, and --resume " + *command.resume + " goes on with one",
        "give one of them: --resume FILE into a folder of its own begins a run from it");
  }
  if (command.resume && *command.resume == "auto" && !command.output_dir) {
    usage_error("--resume auto looks for checkpoints in the run's folder, but there is no --output",
                "give the run's folder with --output");
  }
}

// Options that do nothing under this launch are usage errors, before anything starts.
void check_launch_options(const cli::Command& command,
                          const std::optional<launch::RankInfo>& launched) {
  if (launched && command.nodes.given && launched->launcher != "dptrain") {
    usage_error(
        "--nnodes, --node-rank, --master-addr and --master-port are for dptrain's own "
        "launch, but " +
            launched->launcher + " started this process",
        "leave them out: " + launched->launcher + " decides the ranks");
  }
  if (command.max_restarts && (!launched || launched->launcher != "dptrain")) {
    usage_error("--max-restarts restarts the ranks that dptrain's launcher starts, and " +
                    (launched ? launched->launcher + " started this one"
                              : std::string("this run has no ranks to launch (one device)")),
                launched ? "let " + launched->launcher + " restart it" : "leave it out");
  }
}

// Rank 0's choice of the run's folder and origin (run/origin.h), with the command line that
// would go on from its newest checkpoint where this process knows it.
run::OpenedOrigin choose_origin(const cli::Command& command, const config::Config& config,
                                const launch::RankInfo& rank,
                                const std::vector<std::string>& argv) {
  run::OriginRequest request;
  request.output = command.output_dir;
  request.overwrite = command.overwrite;
  request.resume = command.resume;
  request.init_from = command.init_from;
  request.job_id = rank.job_id;
  request.restart_count = rank.restart_count;
  run::OpenedOrigin opened = run::choose_origin(request, config);
  opened.origin.command = argv;
  if (rank.launcher == "none" || rank.launcher == "dptrain") {
    opened.origin.resume_command = shell_text(resume_argv(argv, opened.output));
  }
  return opened;
}

int train_here(const cli::Command& command, const config::Config& config,
               const std::optional<launch::RankInfo>& launched,
               const std::vector<std::string>& argv) {
  check_launch_options(command, launched);
  const launch::RankInfo rank = launched.value_or(launch::RankInfo{});
  core::init_logging(config::name_of(config.log.level), rank.rank);
  if (rank.rank == 0) {
    for (const std::string& warning : config::idle_key_warnings(config, rank.launcher)) {
      spdlog::warn("{}", warning);
    }
  }
  core::install_interrupt_handler();
  core::install_preemption_handler();
  core::take_signals_on_own_thread();  // a notice that came while this rank started acts now
  // A peer that dies mid-collective must surface as Gloo's error naming the collective, not as
  // a SIGPIPE killing this rank silently when Gloo writes to its socket (Python ignores SIGPIPE
  // too, so PyTorch's users see the same).
  std::signal(SIGPIPE, SIG_IGN);
  // Rank 0 decides; the other ranks learn its choices (train/start_file.h) and write nothing.
  run::OpenedOrigin opened;  // its lock held until the run has ended
  opened.origin.command = argv;
  const bool output_existed = command.output_dir && std::filesystem::exists(*command.output_dir);
  try {
    if (rank.rank == 0) opened = choose_origin(command, config, rank, argv);
    train::train(config, opened.output, std::cout, rank, opened.origin);
  } catch (...) {
    // A run that failed before writing anything (a rank that never arrived, a missing device)
    // leaves no empty folder behind.
    std::error_code ec;
    if (!opened.output.empty() && !output_existed && std::filesystem::is_empty(opened.output, ec)) {
      std::filesystem::remove(opened.output, ec);
    }
    throw;
  }
  return 0;
}

}  // namespace

int run_train(const cli::Command& command, const std::vector<std::string>& argv) {
  check_command_line(command);
  // --init-from is looked at before the data set is loaded, by the process a user started. A rank
  // that a launcher started leaves it to the ranks' agreement on the file (train/start_file.h),
  // which names a rank that lacks it instead of leaving the others waiting at the rendezvous.
  if (command.init_from && !launch::detect_launcher(launch::process_environment())) {
    check_model_file(*command.init_from);
  }
  const config::Config config = resolve(command);
  if (auto status = launch_ranks_if_needed(command, config, argv, Purpose::kTrain)) {
    return *status;
  }
  const auto launched = launch::detect_launcher(launch::process_environment());
  if (command.nodes.given && !launched && config.parallel.backend != config::Backend::kDdp) {
    usage_error("--nnodes, --node-rank, --master-addr and --master-port launch ddp ranks",
                "set parallel.backend to \"ddp\"");
  }
  return train_here(command, config, launched, argv);
}

}  // namespace dptrain::app
