#include "run/rewind_record.h"

#include <nlohmann/json.hpp>
#include <system_error>

#include "config/json_text.h"
#include "core/error.h"
#include "core/fs.h"
#include "run/branch.h"
#include "run/layout.h"

namespace dptrain::run {

void write_rewind_record(const std::filesystem::path& dir, const RewindRecord& record) {
  const nlohmann::json j = {{"resume", record.resume.string()},
                            {"after_epochs", record.after.first},
                            {"after_batches", record.after.second},
                            {"aside", record.aside}};
  // A checkpoint's path need not be UTF-8: such bytes become U+FFFD, and the resume that reads
  // the record back then finds no such checkpoint and says so.
  core::write_file_atomic(dir / kRewindFile,
                          j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::optional<RewindRecord> pending_rewind(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kRewindFile;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return std::nullopt;
  const auto refuse = [&](const std::string& what) {
    return core::Error(core::ErrorCode::kIo,
                       path.string() + ": not the record of a rewind under way: " + what,
                       "move it aside and resume by name (--resume FILE) from the checkpoint "
                       "you mean (--resume auto would take the newest, of the old branch maybe), "
                       "or --overwrite the run");
  };
  RewindRecord record;
  try {
    const auto j = config::parse_json(core::read_regular_file(path));
    record.resume = j.at("resume").get<std::string>();
    record.after = {config::integer_at(j, "after_epochs"), config::integer_at(j, "after_batches")};
    record.aside = j.at("aside").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw refuse(config::plain_json_error(e));
  }
  if (!record.resume.is_absolute()) throw refuse("the checkpoint's path is not absolute");
  // {-1, -1}: every checkpoint went aside (a rewind to a checkpoint from outside the folder).
  const bool everything = record.after == Position{-1, -1};
  if (!everything && (record.after.first < 0 || record.after.second < 0)) {
    throw refuse("the position it goes back to is negative");
  }
  // A folder's name alone, of the form set_aside_abandoned_branch gives: nothing outside the
  // run's own folders is ever moved into.
  if (!is_abandoned_folder_name(record.aside)) {
    throw refuse("\"" + record.aside + "\" is not the name of an abandoned-<time> folder");
  }
  return record;
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
