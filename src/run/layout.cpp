#include "run/layout.h"

#include <regex>
#include <system_error>

namespace dptrain::run {

std::filesystem::path checkpoint_dir(const config::Config& config,
                                     const std::filesystem::path& output_dir,
                                     const std::string& run_id) {
  return config.checkpoint.dir.empty() ? output_dir / kCheckpointFolder
                                       : std::filesystem::path(config.checkpoint.dir) / run_id;
}

bool is_run_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / kConfigFile, ec) ||
         std::filesystem::is_regular_file(dir / kRunFile, ec);
}

bool holds_results(const std::filesystem::path& dir) {
  for (const char* file : {kMetricsFile, kSummaryFile, kConfigFile, kRunFile}) {
    if (std::filesystem::exists(dir / file)) return true;
  }
  return false;
}

bool written_by_a_run(const std::string& name) {
  // The names above, the event files (tensorboard_log.h) and the checkpoints (checkpoints.h).
  static const std::regex kNames(
      R"((metrics\.jsonl|metrics\.csv|summary\.json|config\.json|run\.json|state\.json|)"
      R"(rewind\.json|model\.pt|best\.pt|)"
      R"(events\.out\.tfevents\.[^/]+|epoch-\d{4,}(-batch-\d{6,})?\.pt)(\.tmp\..*)?)");
  return std::regex_match(name, kNames);
}

}  // namespace dptrain::run
