#include "run/checkpoints.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <regex>

#include <spdlog/spdlog.h>

#include "core/fs.h"
#include "run/layout.h"

namespace dptrain::run {
namespace {

// The number a regex group of digits holds, or nothing when it is too large for one.
std::optional<int64_t> number_of(const std::ssub_match& digits) {
  const std::string text = digits.str();
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The epoch and preemption checkpoints in `dir` with their positions, oldest first. A name whose
// numbers no run could reach (more than 19 digits) is no checkpoint of ours.
std::vector<std::pair<Position, std::filesystem::path>> positioned_checkpoints(
    const std::filesystem::path& dir) {
  static const std::regex kName(R"(epoch-(\d{4,})(?:-batch-(\d{6,}))?\.pt)");
  std::vector<std::pair<Position, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, kName)) continue;
    const std::optional<int64_t> epochs = number_of(m[1]);
    const std::optional<int64_t> steps = m[2].matched ? number_of(m[2]) : int64_t{0};
    if (!epochs || !steps) continue;
    found.push_back({{*epochs, *steps}, entry.path()});
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The epoch and preemption checkpoints in `dir`, oldest first (by finished epochs, then steps).
std::vector<std::filesystem::path> checkpoints_in_order(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& f : positioned_checkpoints(dir)) paths.push_back(f.second);
  return paths;
}

}  // namespace

std::string checkpoint_name(int64_t finished_epochs, int64_t batches_done) {
  char name[64];
  if (batches_done == 0) {
    std::snprintf(name, sizeof name, "epoch-%04lld.pt", static_cast<long long>(finished_epochs));
  } else {
    std::snprintf(name, sizeof name, "epoch-%04lld-batch-%06lld.pt",
                  static_cast<long long>(finished_epochs), static_cast<long long>(batches_done));
  }
  return name;
}

Checkpointer::Checkpointer(const config::Config& config, std::filesystem::path dir, bool writer)
    : config_(config), dir_(std::move(dir)), writer_(writer) {}

std::filesystem::path Checkpointer::save(const std::string& name, const Gather& gather) {
  const std::filesystem::path path = dir_ / name;
  const CheckpointContents contents = gather();  // on every rank: it may be a collective
  if (writer_) {
    core::ensure_own_folder(dir_, "the checkpoint folder");
    write_checkpoint_file(path, config_, contents);
    spdlog::debug("checkpoint {} written: epoch {}, batch {}, optimizer step {}", path.string(),
                  contents.point.epoch + 1, contents.point.batches_done,
                  contents.point.global_step);
  }
  return path;
}

void Checkpointer::within_epoch(int64_t epoch, int64_t batches_done, int64_t global_step,
                                const Gather& gather) {
  const int64_t every = config_.checkpoint.every_steps;
  if (every <= 0 || global_step % every != 0) return;
  save(checkpoint_name(epoch, batches_done), gather);
  if (writer_) prune_checkpoints(dir_, config_.checkpoint.keep_last);
}

void Checkpointer::after_epoch(int64_t epoch, int64_t global_step, bool improved, bool last,
                               const Gather& gather) {
  const int64_t every = config_.checkpoint.every_epochs;
  // A step checkpoint due at the epoch's last step is this one, whatever every_epochs says.
  const int64_t every_steps = config_.checkpoint.every_steps;
  const bool step_due = every_steps > 0 && global_step % every_steps == 0;
  if ((every > 0 && (epoch % every == 0 || epoch == config_.train.epochs || last)) || step_due) {
    save(checkpoint_name(epoch, 0), gather);
    if (writer_) prune_checkpoints(dir_, config_.checkpoint.keep_last);
  }
  if (config_.checkpoint.save_best && improved) save(kBestCheckpoint, gather);
}

std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir) {
  const auto found = checkpoints_in_order(dir);
  if (found.empty()) return std::nullopt;
  return found.back();
}

std::vector<std::filesystem::path> checkpoints_after(const std::filesystem::path& dir,
                                                     Position position) {
  std::vector<std::filesystem::path> later;
  for (const auto& f : positioned_checkpoints(dir)) {
    if (f.first > position) later.push_back(f.second);
  }
  return later;
}

void prune_checkpoints(const std::filesystem::path& dir, int64_t keep) {
  if (keep <= 0) return;
  const auto found = checkpoints_in_order(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) {
    std::error_code ec;
    if (!std::filesystem::remove(found[i], ec) && ec) {
      spdlog::warn("could not prune the checkpoint {}: {}", found[i].string(), ec.message());
    }
  }
}

}  // namespace dptrain::run
