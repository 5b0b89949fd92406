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
#include "distributed/rendezvous.h"
#include "train/checkpoint.h"
#include "train/checkpoint_file.h"
#include "train/run_dir.h"
#include "train/trainer.h"

namespace dptrain::app {
namespace {

// A checkpoint named by --resume FILE: of the folder's own run, or of the run this one went on
// from; into a folder of no run it begins a run of its own, which remembers the file.
std::filesystem::path named_resume_point(const std::filesystem::path& path,
                                         train::RunFolder& folder) {
  if (!std::filesystem::is_regular_file(path)) {
    throw core::Error(core::ErrorCode::kIo, path.string() + ": no such checkpoint",
                      "give a file from a run's checkpoints folder, or --resume auto");
  }
  const std::string run = train::checkpoint_run_id(path);
  if (!train::is_run_id(run)) {
    throw core::Error(
        core::ErrorCode::kIo,
        path.string() + ": a damaged checkpoint: its run id \"" + run + "\" is not 16 hex digits",
        "give another checkpoint from the run's checkpoints folder");
  }
  train::RunRecord& own = folder.record;
  if (!folder.existing) {
    own.resumed_from = std::filesystem::absolute(path).string();
    own.resumed_from_run = run;
  } else if (run != own.run_id && run != own.resumed_from_run) {
    throw core::Error(core::ErrorCode::kIo,
                      path.string() + ": a checkpoint of run " + run + ", but " +
                          folder.dir.string() + " holds run " + own.run_id,
                      "resume it into a folder of its own (another --output), or resume run " +
                          own.run_id + " with --resume auto");
  }
  return path;
}

// The checkpoint --resume names: a file, or for "auto" the newest in the run's checkpoint folder
// (none there: where the run began, or a fresh start, so that one command serves a job's first
// run and its requeues), which must be of the folder's own run. Rank 0's to decide.
std::optional<std::filesystem::path> resume_point(const cli::Command& command,
                                                  const config::Config& config,
                                                  train::RunFolder& folder) {
  if (!command.resume || folder.replaces_earlier) return std::nullopt;
  if (*command.resume != "auto") return named_resume_point(*command.resume, folder);
  const std::string& id = folder.record.run_id;
  const std::filesystem::path dir = train::checkpoint_dir(config, folder.dir, id);
  auto latest = train::latest_checkpoint(dir);
  if (!latest && !folder.record.resumed_from.empty()) {
    const std::filesystem::path began = folder.record.resumed_from;
    if (train::checkpoint_run_id(began) != folder.record.resumed_from_run) {
      throw core::Error(core::ErrorCode::kIo,
                        began.string() + ": no longer a checkpoint of run " +
                            folder.record.resumed_from_run + ", where run " + id + " began",
                        "resume it by name (--resume FILE) from the checkpoint you mean");
    }
    spdlog::info(
        "--resume auto: no checkpoint of the run's own in {}; going on from {}, where it "
        "began",
        dir.string(), began.string());
    return began;
  }
  if (!latest) {
    spdlog::info("--resume auto: no checkpoint in {}; starting from the beginning", dir.string());
    return std::nullopt;
  }
  const std::string run = train::checkpoint_run_id(*latest);
  if (run != id) {
    throw core::Error(core::ErrorCode::kIo,
                      latest->string() + ": a checkpoint of run " + run + ", not of run " + id +
                          " that " + folder.dir.string() + " holds",
                      "remove it, or resume it by name (--resume " + latest->string() +
                          ") into a folder of its own");
  }
  return latest;
}

// Whether the folder's run is this job's own: one its earlier attempt began, which a restart or
// requeue goes on with.
bool run_of_this_job(const std::optional<std::filesystem::path>& dir,
                     const distributed::RankInfo& rank) {
  if (!dir || rank.restart_count == 0) return false;
  try {
    const auto record = train::run_record_of(*dir);
    return record && !record->job.empty() && record->job == rank.job_id;
  } catch (const core::Error&) {  // a damaged run.json belongs to no job: --overwrite replaces it
    return false;
  }
}

// How rank 0 opens the output folder. --overwrite replaces the run there; beside --resume auto (a
// requeued job's command line keeps both) it does so unless the run is this job's own, begun by
// an earlier attempt (a first attempt that failed before it could start left the earlier run,
// which is replaced then). --resume alone goes on with the folder's run; else the folder must
// hold none.
train::RunStart run_start(const cli::Command& command, const distributed::RankInfo& rank) {
  if (command.overwrite && !(command.resume && run_of_this_job(command.output_dir, rank))) {
    return train::RunStart::kOverwrite;
  }
  return command.resume ? train::RunStart::kResume : train::RunStart::kNew;
}

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
                          const std::optional<distributed::RankInfo>& launched) {
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

// Rank 0's choices: the output folder (into `output`, locked by `folder_lock`) and its run, the
// file to start from, and the command line that would go on from the run's newest checkpoint.
train::Start choose_start(const cli::Command& command, const config::Config& config,
                          const distributed::RankInfo& rank, const std::vector<std::string>& argv,
                          std::filesystem::path& output,
                          std::shared_ptr<const core::FileLock>& folder_lock) {
  train::Start start;
  start.command = argv;
  train::RunFolder folder =
      train::open_run_folder(command.output_dir, config, run_start(command, rank));
  output = folder.dir;
  folder_lock = folder.lock;
  start.resume = resume_point(command, config, folder);
  start.run = folder.record;
  start.run.job = rank.job_id;  // the job that starts it now
  start.replace_earlier = folder.replaces_earlier;
  start.init_from = command.init_from;
  spdlog::debug("run {} in {}{}", start.run.run_id, output.string(),
                start.replace_earlier ? ", replacing the run there" : "");
  if (rank.launcher == "none" || rank.launcher == "dptrain") {
    start.resume_command = shell_text(resume_argv(argv, output));
  }
  return start;
}

int train_here(const cli::Command& command, const config::Config& config,
               const std::optional<distributed::RankInfo>& launched,
               const std::vector<std::string>& argv) {
  check_launch_options(command, launched);
  const distributed::RankInfo rank = launched.value_or(distributed::RankInfo{});
  core::init_logging(config::name_of(config.log.level), rank.rank);
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
  // Rank 0 decides; the other ranks learn its choices (train/start_file.h) and write nothing.
  train::Start start;
  start.command = argv;
  std::filesystem::path output;
  std::shared_ptr<const core::FileLock> folder_lock;  // held until the run has ended
  const bool output_existed = command.output_dir && std::filesystem::exists(*command.output_dir);
  try {
    if (rank.rank == 0) start = choose_start(command, config, rank, argv, output, folder_lock);
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
  check_command_line(command);
  // --init-from is looked at before the data set is loaded, by the process a user started. A rank
  // that a launcher started leaves it to the ranks' agreement on the file (train/start_file.h),
  // which names a rank that lacks it instead of leaving the others waiting at the rendezvous.
  if (command.init_from && !distributed::detect_launcher(distributed::process_environment())) {
    check_model_file(*command.init_from);
  }
  const config::Config config = resolve(command);
  if (auto status = launch_ranks_if_needed(command, config, argv, Purpose::kTrain)) {
    return *status;
  }
  const auto launched = distributed::detect_launcher(distributed::process_environment());
  if (command.nodes.given && !launched && config.parallel.backend != config::Backend::kDdp) {
    usage_error("--nnodes, --node-rank, --master-addr and --master-port launch ddp ranks",
                "set parallel.backend to \"ddp\"");
  }
  return train_here(command, config, launched, argv);
}

}  // namespace dptrain::app
