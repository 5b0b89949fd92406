#include "run/origin.h"

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "run/checkpoint_format.h"
#include "run/checkpoints.h"
#include "run/layout.h"
#include "run/rewind_record.h"

namespace dptrain::run {
namespace {

// A checkpoint named by --resume FILE: of the folder's own run, or of the run this one went on
// from; into a folder of no run it begins a run of its own, which remembers the file.
std::filesystem::path named_resume_point(const std::filesystem::path& path, RunFolder& folder) {
  if (!std::filesystem::is_regular_file(path)) {
    throw core::Error(core::ErrorCode::kIo, path.string() + ": no such checkpoint",
                      "give a file from a run's checkpoints folder, or --resume auto");
  }
  const std::string run = checkpoint_run_id(path);
  if (!is_run_id(run)) {
    throw core::Error(
        core::ErrorCode::kIo,
        path.string() + ": a damaged checkpoint: its run id \"" + run + "\" is not 16 hex digits",
        "give another checkpoint from the run's checkpoints folder");
  }
  RunRecord& own = folder.record;
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

// --resume auto with no checkpoint of the run's own: where the run began, if it began from
// another run's checkpoint (which must still be that run's), else a fresh start.
std::optional<std::filesystem::path> where_it_began(const RunRecord& record,
                                                    const std::filesystem::path& dir) {
  if (record.resumed_from.empty()) {
    spdlog::info("--resume auto: no checkpoint in {}; starting from the beginning", dir.string());
    return std::nullopt;
  }
  const std::filesystem::path began = record.resumed_from;
  if (checkpoint_run_id(began) != record.resumed_from_run) {
    throw core::Error(core::ErrorCode::kIo,
                      began.string() + ": no longer a checkpoint of run " +
                          record.resumed_from_run + ", where run " + record.run_id + " began",
                      "resume it by name (--resume FILE) from the checkpoint you mean");
  }
  spdlog::info(
      "--resume auto: no checkpoint of the run's own in {}; going on from {}, where it began",
      dir.string(), began.string());
  return began;
}

// What to do about a killed rewind whose checkpoint is gone or unreadable: nothing can finish it.
std::string give_up_hint(const RewindRecord& rewind, const RunFolder& folder) {
  return "if the stopped start had another checkpoint.dir, resume with that one; else the rewind "
         "cannot go on: remove " +
         (folder.dir / kRewindFile).string() +
         " to give it up (what it set aside so far stays in its " + rewind.aside +
         " folders), then resume by name (--resume FILE)";
}

// Whether the rewind's checkpoint is there and readable, so that finishing the rewind can work.
bool rewind_checkpoint_readable(const RewindRecord& rewind) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(rewind.resume, ec)) return false;
  try {
    checkpoint_position(rewind.resume);
    return true;
  } catch (const core::Error&) {
    return false;
  }
}

// --resume auto where a rewind was killed while it set the old branch aside (or --resume naming
// the rewind's own checkpoint): that checkpoint, which this start goes on from once it has
// finished the move (RunFiles::begin), never what is left of the old branch.
std::filesystem::path interrupted_rewind_point(const std::string& asked, const RewindRecord& rewind,
                                               RunFolder& folder) {
  const std::filesystem::path record = folder.dir / kRewindFile;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(rewind.resume, ec)) {
    throw core::Error(core::ErrorCode::kIo,
                      rewind.resume.string() + ": no such checkpoint, where the rewind that " +
                          record.string() + " records went back to",
                      give_up_hint(rewind, folder));
  }
  std::filesystem::path point;
  try {
    check_rewind_position(folder.dir, rewind);
    point = named_resume_point(rewind.resume, folder);
  } catch (const core::Error& e) {  // a damaged checkpoint: no other would finish the rewind
    const std::string what = e.what();
    throw core::Error(e.code(),
                      what.rfind(record.string(), 0) == 0
                          ? what
                          : record.string() + ": the rewind it records cannot go on: " + what,
                      give_up_hint(rewind, folder));
  }
  spdlog::info(
      "--resume {}: {} records a rewind that was stopped while it set the old branch aside; "
      "going on from {}, where it went back to",
      asked, record.string(), rewind.resume.string());
  return point;
}

// --resume FILE where a rewind was killed while it set the old branch aside: the rewind's own
// checkpoint alone. Another would go on from a branch the move is about to set aside (the old
// one's newest, say), or leave the rewind unfinished behind a new one.
void refuse_past_interrupted_rewind(const std::filesystem::path& named, const RewindRecord& rewind,
                                    const RunFolder& folder) {
  std::error_code ec;
  if (std::filesystem::equivalent(named, rewind.resume, ec)) return;
  throw core::Error(core::ErrorCode::kIo,
                    (folder.dir / kRewindFile).string() + ": a rewind to " +
                        rewind.resume.string() +
                        " was stopped while it set the old branch aside, and " + named.string() +
                        " is not that checkpoint",
                    rewind_checkpoint_readable(rewind)
                        ? "finish it first with --resume auto (it goes on from the rewind's "
                          "checkpoint); then go back to the checkpoint you mean"
                        : "its checkpoint is gone or unreadable: " + give_up_hint(rewind, folder));
}

// The checkpoint --resume names: a file, or for "auto" an interrupted rewind's, else the newest in
// the run's checkpoint folder (none there: where_it_began), which must be of the folder's own run.
std::optional<std::filesystem::path> resume_point(const OriginRequest& request,
                                                  const config::Config& config, RunFolder& folder) {
  if (!request.resume || folder.replaces_earlier) return std::nullopt;
  const std::string& id = folder.record.run_id;
  const std::filesystem::path dir = checkpoint_dir(config, folder.dir, id);
  // Read here, before any rank trains: a damaged record is refused while the folder is as it was.
  if (const auto rewind = pending_rewind(folder.dir, dir)) {
    if (*request.resume != "auto") refuse_past_interrupted_rewind(*request.resume, *rewind, folder);
    return interrupted_rewind_point(*request.resume, *rewind, folder);
  }
  if (*request.resume != "auto") return named_resume_point(*request.resume, folder);
  const auto latest = latest_checkpoint(dir);
  if (!latest) return where_it_began(folder.record, dir);
  const std::string run = checkpoint_run_id(*latest);
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
bool run_of_this_job(const OriginRequest& request) {
  if (!request.output || request.restart_count == 0) return false;
  try {
    const auto record = run_record_of(*request.output);
    return record && !record->job.empty() && record->job == request.job_id;
  } catch (const core::Error&) {  // a damaged run.json belongs to no job: --overwrite replaces it
    return false;
  }
}

// --overwrite replaces the run there; beside --resume auto (a requeued job's command line keeps
// both) it does so unless the run is this job's own, begun by an earlier attempt (a first attempt
// that failed before it could start left the earlier run, which is replaced then). --resume alone
// goes on with the folder's run; else the folder must hold none.
FolderMode folder_mode(const OriginRequest& request) {
  if (request.overwrite && !(request.resume && run_of_this_job(request))) {
    return FolderMode::kOverwrite;
  }
  return request.resume ? FolderMode::kResume : FolderMode::kNew;
}

}  // namespace

OpenedOrigin choose_origin(const OriginRequest& request, const config::Config& config) {
  const bool existed = request.output && std::filesystem::exists(*request.output);
  RunFolder folder = open_run_folder(request.output, config, folder_mode(request));
  OpenedOrigin opened;
  opened.output = folder.dir;
  opened.lock = folder.lock;
  RunOrigin& origin = opened.origin;
  try {
    origin.resume = resume_point(request, config, folder);
  } catch (...) {
    // A start refused here leaves no empty folder of its making behind.
    std::error_code ec;
    if (!existed && std::filesystem::is_empty(folder.dir, ec)) {
      std::filesystem::remove(folder.dir, ec);
    }
    throw;
  }
  origin.run = folder.record;
  origin.run.job = request.job_id;  // the job that starts it now
  origin.replace_earlier = folder.replaces_earlier;
  origin.init_from = request.init_from;
  spdlog::debug("run {} in {}{}", origin.run.run_id, opened.output.string(),
                origin.replace_earlier ? ", replacing the run there" : "");
  return opened;
}

}  // namespace dptrain::run
