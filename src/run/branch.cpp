#include "run/branch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "core/wall_clock.h"
#include "run/checkpoints.h"
#include "run/layout.h"
#include "run/rewind_record.h"

namespace dptrain::run {
namespace {

// What the abandoned branch wrote later than the point a rewind goes back to.
struct LaterFiles {
  std::vector<std::filesystem::path> checkpoints;  // and best.pt, when it is later
  std::vector<std::filesystem::path> results;      // of a run the abandoned branch finished
  size_t count() const { return checkpoints.size() + results.size(); }
};

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

// Worked out from the folders alone, so that a killed rewind's next start, which finishes the
// move, finds what is left of the same files. The results go aside with the checkpoints: once a
// rewind is recorded they are the abandoned branch's, whatever is left of its checkpoints.
LaterFiles later_files(const std::filesystem::path& output_dir,
                       const std::filesystem::path& checkpoint_dir, Position position) {
  LaterFiles later;
  later.checkpoints = checkpoints_after(checkpoint_dir, position);
  if (best_is_later(checkpoint_dir / kBestCheckpoint, position)) {
    later.checkpoints.push_back(checkpoint_dir / kBestCheckpoint);
  }
  for (const char* name : {kSummaryFile, kModelFile}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(std::filesystem::symlink_status(output_dir / name, ec))) {
      later.results.push_back(output_dir / name);
    }
  }
  return later;
}

// A name for a folder of set aside files, taken by nothing yet in either folder, after the time
// of the rewind.
std::string free_abandoned_name(const std::filesystem::path& checkpoint_dir,
                                const std::filesystem::path& output_dir) {
  const std::string base = "abandoned-" + core::local_timestamp();
  for (int i = 0;; ++i) {
    const std::string name = i == 0 ? base : base + "-" + std::to_string(i);
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(checkpoint_dir / name, ec)) &&
        !std::filesystem::exists(std::filesystem::symlink_status(output_dir / name, ec))) {
      return name;
    }
  }
}

// What stands where a folder for set aside files was to be made.
std::string what_is_there(const std::filesystem::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return "something this user cannot look at";
  if (S_ISLNK(st.st_mode)) return "a link, which is never followed";
  if (!S_ISDIR(st.st_mode)) return "a file of that name";
  return "a folder of another user's (uid " + std::to_string(st.st_uid) + ")";
}

// The record's folder: made here, or one an interrupted move made (a folder of this user's,
// never a link: nothing is moved anywhere else).
void make_aside_folder(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return;
  const int made = errno;
  struct stat st {};
  if (made == EEXIST && ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      st.st_uid == ::geteuid()) {
    return;
  }
  throw core::Error(
      core::ErrorCode::kIo,
      dir.string() + ": cannot make a folder for the abandoned branch's files: " +
          (made == EEXIST ? "there is " + what_is_there(dir) : std::string(std::strerror(made))),
      "check the folder's permissions and free space (or move what is there "
      "aside), then resume again");
}

void move_into(const std::vector<std::filesystem::path>& files, const std::filesystem::path& dir) {
  if (files.empty()) return;
  for (const auto& file : files) {
    // Never over a file of that name already there (an earlier branch's, in a folder a record
    // someone else wrote names): nothing of any branch is lost.
    const std::filesystem::path to = dir / file.filename();
    if (::renameat2(AT_FDCWD, file.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
      throw core::Error(core::ErrorCode::kIo,
                        file.string() + ": cannot move it aside into " + dir.string() + ": " +
                            std::strerror(errno),
                        "move it yourself (or what has its name there), then resume again");
    }
  }
  // On disk before the record goes: a crash then cannot leave files back where they were with
  // no record to move them again.
  core::sync_folder(dir);
  core::sync_folder(files.front().parent_path());
}

// Moves what `record` sets aside, then removes the record.
void carry_out(const std::filesystem::path& output_dir, const std::filesystem::path& checkpoint_dir,
               const RewindRecord& record, const LaterFiles& later) {
  // Both folders first: one that cannot be made (a link or a file planted there) then stops the
  // rewind before anything has moved.
  if (!later.checkpoints.empty()) make_aside_folder(checkpoint_dir / record.aside);
  if (!later.results.empty()) make_aside_folder(output_dir / record.aside);
  move_into(later.checkpoints, checkpoint_dir / record.aside);
  move_into(later.results, output_dir / record.aside);
  remove_rewind_record(output_dir);
}

std::string moved_text(const std::filesystem::path& output_dir,
                       const std::filesystem::path& checkpoint_dir, const RewindRecord& record,
                       const LaterFiles& later) {
  if (later.count() == 0) return "nothing, as nothing of the abandoned branch was left to move";
  std::string text;
  if (!later.checkpoints.empty()) {
    text = std::to_string(later.checkpoints.size()) + " later checkpoint(s) of the abandoned " +
           "branch to " + (checkpoint_dir / record.aside).string();
  }
  if (!later.results.empty()) {
    text += (text.empty() ? "the abandoned branch's results to " : ", and its results to ") +
            (output_dir / record.aside).string();
  }
  return text;
}

}  // namespace

bool is_abandoned_folder_name(const std::string& name) {
  // abandoned-YYYYMMDD-HHMMSS, then -N (up to 9 digits) when that name was taken. By hand, not
  // std::regex: libstdc++'s matcher recurses once per character, and a record's name is untrusted.
  const auto digits = [&](size_t at, size_t count) {
    return at + count <= name.size() &&
           std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at),
                       name.begin() + static_cast<std::ptrdiff_t>(at + count),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  const std::string prefix = "abandoned-";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t date = prefix.size();
  if (!digits(date, 8) || name.size() <= date + 8 || name[date + 8] != '-') return false;
  if (!digits(date + 9, 6)) return false;
  const size_t rest = date + 15;
  if (name.size() == rest) return true;
  const size_t taken = name.size() - rest - 1;
  return name[rest] == '-' && taken >= 1 && taken <= 9 && digits(rest + 1, taken);
}

int set_aside_abandoned_branch(const std::filesystem::path& output_dir,
                               const std::filesystem::path& checkpoint_dir,
                               const std::filesystem::path& resume, Position position) {
  const LaterFiles later = later_files(output_dir, checkpoint_dir, position);
  if (later.checkpoints.empty()) return 0;  // no rewind: the results are this branch's
  RewindRecord record;
  record.resume = std::filesystem::absolute(resume);
  // The record names a checkpoint of the folder's own by its file name: it must be that file.
  std::error_code ec;
  if (position != kEveryCheckpoint &&
      !std::filesystem::equivalent(checkpoint_dir / record.resume.filename(), record.resume, ec)) {
    throw core::Error(core::ErrorCode::kRuntime,
                      record.resume.string() +
                          ": a rewind to a position of the run's own from "
                          "outside its checkpoint folder " +
                          checkpoint_dir.string(),
                      "report this: a rewind's record would name another checkpoint");
  }
  record.after = position;
  record.aside = free_abandoned_name(checkpoint_dir, output_dir);
  // From here on the rewind is the run's branch, whatever stops this process.
  write_rewind_record(output_dir, record);
  carry_out(output_dir, checkpoint_dir, record, later);
  spdlog::info("resuming from an earlier checkpoint starts a new branch of the run: moved {}",
               moved_text(output_dir, checkpoint_dir, record, later));
  return static_cast<int>(later.count());
}

int finish_interrupted_rewind(const std::filesystem::path& output_dir,
                              const std::filesystem::path& checkpoint_dir) {
  const auto record = pending_rewind(output_dir, checkpoint_dir);
  if (!record) return 0;
  check_rewind_position(output_dir, *record);  // again: the folder may have changed since origin's
  const LaterFiles later = later_files(output_dir, checkpoint_dir, record->after);
  carry_out(output_dir, checkpoint_dir, *record, later);
  spdlog::info(
      "finished the rewind to {} that was stopped while it set the old branch aside: moved {}",
      record->resume.string(), moved_text(output_dir, checkpoint_dir, *record, later));
  return static_cast<int>(later.count());
}

}  // namespace dptrain::run
