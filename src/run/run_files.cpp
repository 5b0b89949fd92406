#include "run/run_files.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "run/branch.h"
#include "run/layout.h"
#include "run/rewind_record.h"

namespace dptrain::run {

RunFiles::RunFiles(const std::filesystem::path& output_dir, const config::Config& config,
                   const RunOrigin& origin)
    : dir_(output_dir), config_(config), origin_(origin) {}

void RunFiles::begin(const std::optional<Position>& resumed) {
  // What a killed run left half-written is of no use to this one. The folder is locked and
  // nothing is being written yet, so each temporary there is a killed run's.
  const std::filesystem::path checkpoints = checkpoint_dir(config_, dir_, origin_.run.run_id);
  // Checked before anything in it is removed or moved: no planted link is followed.
  core::ensure_own_folder(checkpoints, "the checkpoint folder");
  // A checkpoint.dir elsewhere is under no lock of this run's (a copy of the run folder has
  // the same id): only the temporaries of writers gone are certain to be stale there.
  const bool elsewhere = !config_.checkpoint.dir.empty();
  for (const auto& dir : {dir_, checkpoints}) {
    const int removed = dir == checkpoints && elsewhere
                            ? core::remove_stale_temporaries(dir)
                            : core::remove_temporaries_in_locked_folder(dir);
    if (removed > 0) {
      spdlog::info("removed {} temporary file(s) that a killed run left in {}", removed,
                   dir.string());
    }
  }
  if (origin_.replace_earlier) remove_earlier_run(dir_, config_);
  // A rewind killed while it set the old branch aside is finished before anything else: it was
  // the run's branch from the moment its record was written.
  finish_interrupted_rewind(dir_, checkpoints);
  if (origin_.resume) {
    // A checkpoint from outside the run's folder (the run it began from, an abandoned branch's
    // folder) begins a history of its own: every checkpoint there is of another.
    // Judged by the file itself: a bare file name's parent is "" (a --resume given from inside
    // the checkpoint folder), and a link's folder is not its checkpoint's.
    std::error_code ec;
    const std::filesystem::path file =
        std::filesystem::weakly_canonical(std::filesystem::absolute(*origin_.resume), ec);
    const bool own = !ec && std::filesystem::equivalent(file.parent_path(), checkpoints, ec);
    set_aside_abandoned_branch(dir_, checkpoints, own ? file : *origin_.resume,
                               own && resumed ? *resumed : kEveryCheckpoint);
  }
  write_run_file(dir_, origin_.run);
  write_run_state(dir_, RunState::kRunning);
  begun_ = true;
  const nlohmann::json config = config::to_json(config_);
  core::write_file_atomic(dir_ / kConfigFile, config.dump(2) + "\n");
}

void RunFiles::record_state(RunState state) noexcept {
  if (!begun_) return;
  try {
    write_run_state(dir_, state);
  } catch (const std::exception& e) {
    spdlog::warn("could not record the run's state ({}) in state.json: {}", name_of(state),
                 e.what());
  }
}

void RunFiles::finish(const RunSummary& summary) {
  // A command line need not be UTF-8: such bytes become U+FFFD.
  core::write_file_atomic(
      dir_ / kSummaryFile,
      to_json(summary).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  write_run_state(dir_, RunState::kFinished);
}

}  // namespace dptrain::run
