#include "train/run_dir.h"

#include <spdlog/spdlog.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>

#include "config/json_text.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/random.h"
#include "core/sha256.h"

namespace dptrain::train {
namespace {

const char* const kRunFile = "run.json";

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%d-%H%M%S", &local);
  return buffer;
}

bool holds_results(const std::filesystem::path& dir) {
  for (const char* file : {"metrics.jsonl", "summary.json", "config.json", kRunFile}) {
    if (std::filesystem::exists(dir / file)) return true;
  }
  return false;
}

// The files of a run's making in `dir`: its results, or its checkpoints (and their temporaries).
bool written_by_a_run(const std::string& name) {
  static const std::regex kNames(
      R"((metrics\.jsonl|summary\.json|config\.json|run\.json|model\.pt|best\.pt|epoch-\d{4,}(-batch-\d{6,})?\.pt)(\.tmp\..*)?)");
  return std::regex_match(name, kNames);
}

void remove_run_files(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!written_by_a_run(entry.path().filename().string())) continue;
    std::error_code removal;
    if (!std::filesystem::remove(entry.path(), removal) && removal) {
      throw core::Error(
          core::ErrorCode::kIo,
          entry.path().string() + ": cannot remove the earlier run's file: " + removal.message(),
          "remove it yourself, or choose another --output");
    }
  }
}

// --overwrite: everything of the earlier run that a resume could pick up goes.
void remove_earlier_run(const std::filesystem::path& dir, const config::Config& config) {
  const std::optional<std::string> earlier = run_id_of(dir);
  remove_run_files(dir / "checkpoints");
  if (earlier && !config.checkpoint.dir.empty()) {
    remove_run_files(checkpoint_dir(config, dir, *earlier));
  }
  remove_run_files(dir);
  spdlog::info("--overwrite: removed the earlier run{} from {}",
               earlier ? " " + *earlier : std::string(), dir.string());
}

std::string new_run_id() {
  return core::hex(core::random_bytes(8));
}

}  // namespace

void write_run_file(const std::filesystem::path& dir, const std::string& run_id) {
  core::write_file_atomic(dir / kRunFile, nlohmann::json{{"run_id", run_id}}.dump(2) + "\n");
}

std::optional<std::string> run_id_of(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir / kRunFile, ec)) return std::nullopt;
  try {
    const auto id = config::parse_json(core::read_text_file(dir / kRunFile)).at("run_id");
    return id.get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(core::ErrorCode::kIo,
                      (dir / kRunFile).string() + ": not a run's record: " + e.what(),
                      "remove it to start a new run there, or choose another --output");
  }
}

RunFolder open_run_folder(const std::optional<std::filesystem::path>& requested,
                          const config::Config& config, RunStart start) {
  RunFolder folder;
  if (requested) {
    folder.dir = *requested;
    if (start == RunStart::kNew && holds_results(folder.dir)) {
      throw core::Error(core::ErrorCode::kIo,
                        folder.dir.string() + ": already holds a run's results",
                        "choose another --output, add --overwrite to replace them, or --resume "
                        "auto to go on with them");
    }
  } else {
    const std::filesystem::path base = std::filesystem::path("runs") / config.name / timestamp();
    folder.dir = base;
    for (int i = 1; std::filesystem::exists(folder.dir); ++i) {
      folder.dir = base.string() + "-" + std::to_string(i);
    }
  }
  core::ensure_own_folder(folder.dir, "the output folder");
  if (start == RunStart::kOverwrite) remove_earlier_run(folder.dir, config);
  const std::optional<std::string> existing =
      start == RunStart::kResume ? run_id_of(folder.dir) : std::nullopt;
  folder.run_id = existing.value_or(new_run_id());
  return folder;
}

std::filesystem::path checkpoint_dir(const config::Config& config,
                                     const std::filesystem::path& output_dir,
                                     const std::string& run_id) {
  return config.checkpoint.dir.empty() ? output_dir / "checkpoints"
                                       : std::filesystem::path(config.checkpoint.dir) / run_id;
}

}  // namespace dptrain::train
