#include "run/branch.h"

#include <sys/stat.h>

#include <spdlog/spdlog.h>
#include <cerrno>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "core/wall_clock.h"
#include "run/checkpoints.h"
#include "run/layout.h"

namespace dptrain::run {
namespace {

// A folder of its own, made here (never one that was there before: a planted link or another
// branch's files), named for the time of the rewind.
std::filesystem::path new_abandoned_folder(const std::filesystem::path& parent) {
  const std::string base = "abandoned-" + core::local_timestamp();
  for (int i = 0;; ++i) {
    const std::filesystem::path dir = parent / (i == 0 ? base : base + "-" + std::to_string(i));
    if (::mkdir(dir.c_str(), 0755) == 0) return dir;
    if (errno != EEXIST) {
      throw core::Error(core::ErrorCode::kIo,
                        dir.string() + ": cannot make a folder for the abandoned branch's files: " +
                            std::strerror(errno),
                        "check the folder's permissions and free space");
    }
  }
}

void move_into(const std::vector<std::filesystem::path>& files, const std::filesystem::path& dir) {
  for (const auto& file : files) {
    std::error_code ec;
    std::filesystem::rename(file, dir / file.filename(), ec);
    if (ec) {
      throw core::Error(
          core::ErrorCode::kIo,
          file.string() + ": cannot move it aside into " + dir.string() + ": " + ec.message(),
          "move it yourself, then resume again");
    }
  }
}

// best.pt, when the abandoned branch wrote it: later than the resume point.
bool best_is_later(const std::filesystem::path& best, Position position) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(best, ec))) return false;
  try {
    return checkpoint_position(best) > position;
  } catch (const core::Error& e) {  // a damaged best.pt is the next save_best's to replace
    spdlog::warn("{}", e.what());
    return false;
  }
}

}  // namespace

bool is_abandoned_folder_name(const std::string& name) {
  static const std::regex kName(R"(abandoned-\d{8}-\d{6}(-\d+)?)");
  return std::regex_match(name, kName);
}

int set_aside_abandoned_branch(const std::filesystem::path& output_dir,
                               const std::filesystem::path& checkpoint_dir, Position position) {
  std::vector<std::filesystem::path> checkpoints = checkpoints_after(checkpoint_dir, position);
  if (best_is_later(checkpoint_dir / kBestCheckpoint, position)) {
    checkpoints.push_back(checkpoint_dir / kBestCheckpoint);
  }
  if (checkpoints.empty()) return 0;
  const std::filesystem::path aside = new_abandoned_folder(checkpoint_dir);
  move_into(checkpoints, aside);
  std::vector<std::filesystem::path> results;  // of a run the abandoned branch finished
  for (const char* name : {kSummaryFile, kModelFile}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(std::filesystem::symlink_status(output_dir / name, ec))) {
      results.push_back(output_dir / name);
    }
  }
  std::string also;
  if (!results.empty()) {
    const std::filesystem::path results_aside = new_abandoned_folder(output_dir);
    move_into(results, results_aside);
    also = ", and its results to " + results_aside.string();
  }
  spdlog::info(
      "resuming from an earlier checkpoint starts a new branch of the run: moved the "
      "{} later checkpoint(s) of the abandoned branch to {}{}",
      checkpoints.size(), aside.string(), also);
  return static_cast<int>(checkpoints.size() + results.size());
}

}  // namespace dptrain::run
