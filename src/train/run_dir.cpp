#include "train/run_dir.h"

#include <ctime>
#include <system_error>

#include "core/error.h"
#include "core/fs.h"

namespace dptrain::train {
namespace {

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%d-%H%M%S", &local);
  return buffer;
}

bool holds_results(const std::filesystem::path& dir) {
  for (const char* file : {"metrics.jsonl", "summary.json", "config.json"}) {
    if (std::filesystem::exists(dir / file)) return true;
  }
  return false;
}

void create(const std::filesystem::path& dir) {
  core::ensure_own_folder(dir, "the output folder");
}

}  // namespace

std::filesystem::path make_run_dir(const std::optional<std::filesystem::path>& requested,
                                   const std::string& name, bool overwrite) {
  if (requested) {
    if (!overwrite && holds_results(*requested)) {
      throw core::Error(core::ErrorCode::kIo,
                        requested->string() + ": already holds a run's results",
                        "choose another --output, or add --overwrite to replace them");
    }
    create(*requested);
    return *requested;
  }
  const std::filesystem::path base = std::filesystem::path("runs") / name / timestamp();
  std::filesystem::path dir = base;
  for (int i = 1; std::filesystem::exists(dir); ++i) dir = base.string() + "-" + std::to_string(i);
  create(dir);
  return dir;
}

}  // namespace dptrain::train
