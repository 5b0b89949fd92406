#include "run/folder.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>

#include "config/json_text.h"
#include "core/crypto.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/wall_clock.h"
#include "run/branch.h"
#include "run/layout.h"

namespace dptrain::run {
namespace {

void remove_run_files(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // An abandoned branch's folder goes whole (remove_all removes links, never what they name).
    const bool abandoned = is_abandoned_folder_name(name) && !entry.is_symlink(ec);
    if (!written_by_a_run(name) && !abandoned) continue;
    std::error_code removal;
    if (abandoned) {
      std::filesystem::remove_all(entry.path(), removal);
    } else {
      std::filesystem::remove(entry.path(), removal);
    }
    if (removal) {
      throw core::Error(
          core::ErrorCode::kIo,
          entry.path().string() + ": cannot remove the earlier run's file: " + removal.message(),
          "remove it yourself, or choose another --output");
    }
  }
}

std::string new_run_id() {
  return core::hex(core::random_bytes(8));
}

// Two trainings in one folder would interleave their records and checkpoints (a sweep started
// twice, a job array's task run by hand beside SLURM's): the second is refused while the first
// runs. The kernel drops the lock with its process, so a killed run leaves none behind.
void lock_run_folder(RunFolder& folder) {
  folder.lock = std::make_shared<const core::FileLock>(folder.dir, core::FileLock::Mode::kTry);
  if (!folder.lock->held()) {
    throw core::Error(core::ErrorCode::kIo,
                      folder.dir.string() + ": another dptrain is training into this folder now",
                      "wait for it to end (its state.json names its process), or choose another "
                      "--output");
  }
}

}  // namespace

void remove_earlier_run(const std::filesystem::path& dir, const config::Config& config) {
  std::optional<RunRecord> earlier;
  try {
    earlier = run_record_of(dir);
  } catch (const core::Error&) {  // a damaged run.json is replaced with the rest
  }
  std::error_code ec;
  std::filesystem::remove(dir / kRunFile, ec);
  // Then a killed rewind's record: an --overwrite killed here must not leave one for the new run.
  std::filesystem::remove(dir / kRewindFile, ec);
  // Nothing is removed through a link that someone else planted where a checkpoint folder goes.
  core::ensure_own_folder(dir / kCheckpointFolder, "the checkpoint folder");
  remove_run_files(dir / kCheckpointFolder);
  if (earlier && !config.checkpoint.dir.empty()) {
    const std::filesystem::path earlier_checkpoints = checkpoint_dir(config, dir, earlier->run_id);
    core::ensure_own_folder(earlier_checkpoints, "the checkpoint folder");
    remove_run_files(earlier_checkpoints);
  }
  remove_run_files(dir);
  spdlog::info("--overwrite: removed the earlier run{} from {}",
               earlier ? " " + earlier->run_id : std::string(), dir.string());
}

bool is_run_id(const std::string& id) {
  static const std::regex kForm("[0-9a-f]{16}");
  return std::regex_match(id, kForm);
}

void write_run_file(const std::filesystem::path& dir, const RunRecord& record) {
  nlohmann::json j = {{"run_id", record.run_id}, {"job", record.job}};
  if (!record.resumed_from.empty()) {
    j["resumed_from"] = record.resumed_from;
    j["resumed_from_run"] = record.resumed_from_run;
  }
  core::write_file_atomic(dir / kRunFile, j.dump(2) + "\n");
}

std::optional<RunRecord> run_record_of(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir / kRunFile, ec)) return std::nullopt;
  const auto refuse = [&](const std::string& what) {
    return core::Error(core::ErrorCode::kIo,
                       (dir / kRunFile).string() + ": not a run's record: " + what,
                       "remove it to start a new run there, or choose another --output");
  };
  RunRecord record;
  try {
    const auto j = config::parse_json(core::read_text_file(dir / kRunFile));
    record.run_id = j.at("run_id").get<std::string>();
    record.job = j.value("job", "");
    record.resumed_from = j.value("resumed_from", "");
    record.resumed_from_run = j.value("resumed_from_run", "");
  } catch (const nlohmann::json::exception& e) {
    throw refuse(config::plain_json_error(e));
  }
  for (const std::string* id : {&record.run_id, &record.resumed_from_run}) {
    if (!is_run_id(*id) && !(id == &record.resumed_from_run && id->empty())) {
      throw refuse("run id \"" + *id + "\" is not 16 hex digits");
    }
  }
  return record;
}

RunFolder open_run_folder(const std::optional<std::filesystem::path>& requested,
                          const config::Config& config, FolderMode mode) {
  RunFolder folder;
  if (requested) {
    folder.dir = *requested;
    core::ensure_own_folder(folder.dir, "the output folder");
    if (mode == FolderMode::kNew && holds_results(folder.dir)) {
      throw core::Error(core::ErrorCode::kIo,
                        folder.dir.string() + ": already holds a run's results",
                        "choose another --output, add --overwrite to replace them, or --resume "
                        "auto to go on with them");
    }
    lock_run_folder(folder);
  } else {
    // Runs started in the same second take the next free name, each its own.
    const std::filesystem::path base =
        std::filesystem::path("runs") / config.name / core::local_timestamp();
    for (int i = 0; !folder.lock || !folder.lock->held(); ++i) {
      folder.dir = i == 0 ? base : std::filesystem::path(base.string() + "-" + std::to_string(i));
      if (std::filesystem::exists(folder.dir)) continue;
      core::ensure_own_folder(folder.dir, "the output folder");
      folder.lock = std::make_shared<const core::FileLock>(folder.dir, core::FileLock::Mode::kTry);
    }
  }
  folder.replaces_earlier = mode == FolderMode::kOverwrite;
  const std::optional<RunRecord> existing =
      mode == FolderMode::kResume ? run_record_of(folder.dir) : std::nullopt;
  folder.existing = existing.has_value();
  if (existing) {
    folder.record = *existing;
  } else {
    folder.record.run_id = new_run_id();
  }
  return folder;
}

}  // namespace dptrain::run
