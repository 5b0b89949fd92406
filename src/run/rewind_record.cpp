#include "run/rewind_record.h"

#include <climits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "config/json_text.h"
#include "core/error.h"
#include "core/fs.h"
#include "run/branch.h"
#include "run/checkpoint_format.h"
#include "run/layout.h"

namespace dptrain::run {
namespace {

// A record holds a path and three short values: a few kilobytes at most.
constexpr size_t kMaxRecordBytes = 64 * 1024;

core::Error not_a_record(const std::filesystem::path& path, const std::string& what) {
  return core::Error(core::ErrorCode::kIo,
                     path.string() + ": not the record of a rewind under way: " + what,
                     "move it aside and resume by name (--resume FILE) from the checkpoint "
                     "you mean (--resume auto would take the newest, of the old branch maybe), "
                     "or --overwrite the run");
}

// The string at `key`, named when it is missing or no string.
std::string text_at(const nlohmann::json& j, const char* key, const std::filesystem::path& path) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    throw not_a_record(
        path, std::string("\"") + key + "\" is " + (it == j.end() ? "missing" : "not a string"));
  }
  return it->get<std::string>();
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name.size() <= NAME_MAX && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

// The record's values, checked against each other: a checkpoint of the run's own by its file name
// and a position, one from outside by its absolute path with kEveryCheckpoint.
RewindRecord parse_record(const std::filesystem::path& path, const std::string& text,
                          const std::filesystem::path& checkpoint_dir) {
  RewindRecord record;
  std::string resume;
  try {
    const auto j = config::parse_json(text);
    if (!j.is_object()) throw not_a_record(path, "it is no JSON object");
    resume = text_at(j, "resume", path);
    record.after = {config::integer_at(j, "after_epochs"), config::integer_at(j, "after_batches")};
    record.aside = text_at(j, "aside", path);
  } catch (const nlohmann::json::exception& e) {
    throw not_a_record(path, config::plain_json_error(e));
  }
  if (record.after == kEveryCheckpoint) {
    record.resume = resume;
    // A NUL would end the path that system calls see before the one checked here.
    if (!record.resume.is_absolute() || resume.size() > PATH_MAX ||
        resume.find('\0') != std::string::npos) {
      throw not_a_record(path, "a checkpoint from outside the run's is named by an absolute path");
    }
    std::error_code ec;
    if (std::filesystem::equivalent(record.resume.parent_path(), checkpoint_dir, ec)) {
      throw not_a_record(path,
                         "a checkpoint in the run's checkpoint folder is named by its file "
                         "name and the position it was written at");
    }
  } else {
    if (record.after.first < 0 || record.after.second < 0) {
      throw not_a_record(path, "the position it goes back to is negative");
    }
    if (!is_plain_file_name(resume)) {
      throw not_a_record(path, "a checkpoint of the run's own is named by its file name alone");
    }
    record.resume = checkpoint_dir / resume;
  }
  // A folder's name alone, of the form set_aside_abandoned_branch gives: nothing outside the
  // run's own folders is ever moved into.
  if (!is_abandoned_folder_name(record.aside)) {
    throw not_a_record(path, "\"aside\" is not the name of an abandoned-<time> folder");
  }
  return record;
}

}  // namespace

void write_rewind_record(const std::filesystem::path& dir, const RewindRecord& record) {
  const bool own = record.after != kEveryCheckpoint;
  const nlohmann::json j = {{"resume", own ? record.resume.filename().string()
                                           : std::filesystem::absolute(record.resume).string()},
                            {"after_epochs", record.after.first},
                            {"after_batches", record.after.second},
                            {"aside", record.aside}};
  // A checkpoint's path need not be UTF-8: such bytes become U+FFFD, and the resume that reads
  // the record back then finds no such checkpoint and says so.
  core::write_file_atomic(dir / kRewindFile,
                          j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::optional<RewindRecord> pending_rewind(const std::filesystem::path& dir,
                                           const std::filesystem::path& checkpoint_dir) {
  const std::filesystem::path path = dir / kRewindFile;
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (!std::filesystem::exists(status)) return std::nullopt;
  // dptrain writes it as a file: a link is someone else's, and is never followed.
  if (std::filesystem::is_symlink(status)) throw not_a_record(path, "it is a link");
  std::string text;
  try {
    text = core::read_regular_file(path, kMaxRecordBytes);
  } catch (const core::Error& e) {  // its message begins with the path, which is named once
    const std::string what = e.what(), named = path.string() + ": ";
    throw not_a_record(path, what.rfind(named, 0) == 0 ? what.substr(named.size()) : what);
  }
  return parse_record(path, text, checkpoint_dir);
}

void check_rewind_position(const std::filesystem::path& dir, const RewindRecord& record) {
  if (record.after == kEveryCheckpoint) return;
  const Position at = checkpoint_position(record.resume);
  if (at == record.after) return;
  const auto position = [](Position p) {
    return std::to_string(p.first) + " finished epoch(s) and " + std::to_string(p.second) +
           " batch(es)";
  };
  throw not_a_record(dir / kRewindFile, "it goes back to " + position(record.after) + ", but " +
                                            record.resume.string() + " was written after " +
                                            position(at));
}

void remove_rewind_record(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::remove(dir / kRewindFile, ec);
  if (ec) {
    throw core::Error(core::ErrorCode::kIo,
                      (dir / kRewindFile).string() + ": cannot remove it: " + ec.message(),
                      "check the run folder's permissions, then resume again");
  }
  core::sync_folder(dir);
}

}  // namespace dptrain::run
