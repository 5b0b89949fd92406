#include "support/branches.h"

#include "support/runs.h"

namespace dptrain::testing {

std::vector<std::string> branch_job(const TempDir& dir, const std::filesystem::path& out,
                                    const std::vector<std::string>& more) {
  std::vector<std::string> extra = {"--set", "parallel.devices=cpu",
                                    "--set", "checkpoint.every_steps=5",
                                    "--set", "checkpoint.keep_last=0"};
  extra.insert(extra.end(), more.begin(), more.end());
  return momentum_sgd_job(dir / "data", extra, out);
}

std::vector<std::string> rewind_of(const TempDir& dir, const std::filesystem::path& run,
                                   const std::string& resume) {
  auto args = branch_job(dir, run, {"--set", "optimizer.lr=0.03"});
  args.insert(args.end(), {"--resume", resume});
  return args;
}

std::map<std::string, std::string> folder_bytes(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = std::filesystem::relative(e.path(), dir).string();
    if (name.find(".tmp.") != std::string::npos) continue;
    files[name] = e.is_regular_file() ? read_bytes(e.path()) : std::string("<folder>");
  }
  return files;
}

std::vector<std::filesystem::path> folders_named_abandoned(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("abandoned-", 0) == 0) found.push_back(e.path());
  }
  return found;
}

std::vector<double> train_losses(const std::filesystem::path& run) {
  std::vector<double> losses;
  for (const auto& m : metrics_of(run)) losses.push_back(m.at("train_loss").get<double>());
  return losses;
}

}  // namespace dptrain::testing
