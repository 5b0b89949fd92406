#include "train/tensorboard_log.h"

#include <unistd.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <chrono>
#include <regex>

#include "core/wall_clock.h"
#include "serialize/tensorboard_event.h"
#include "serialize/tfrecord.h"

namespace dptrain::train {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string frame(const std::string& event) {
  return serialize::tfrecord_frame(event);
}

// Cuts the run's file back to the records of its earlier part up to the checkpoint's step: a new
// part trains the later steps again. A torn last record (the part was killed mid-write) goes
// too; so does anything that is not a well-formed event. A file with nothing to cut is left as
// it is (a TensorBoard reading it need not reload).
void cut_to_step(const std::filesystem::path& file, int64_t global_step) {
  std::string kept;
  {
    const core::MappedFile mapped(file);  // read in place, not copied
    const std::string_view bytes = mapped.bytes();
    const serialize::TfRecordScan scan = serialize::scan_tfrecords(bytes);
    if (!scan.complete) {
      spdlog::warn("{}: dropped {} bytes after the last whole record (a killed run's last write)",
                   file.string(), bytes.size() - scan.valid_bytes);
    }
    for (const auto record : scan.records) {
      const auto header = serialize::decode_event_header(record);
      if (header && header->step <= global_step) kept += serialize::tfrecord_frame(record);
    }
    if (kept == bytes) return;
  }
  core::write_file_atomic(file, kept);
}

std::string markdown_code_block(const std::string& text) {
  std::string out;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    out += "    " + text.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
  return out;
}

}  // namespace

std::vector<std::filesystem::path> event_files(const std::filesystem::path& dir) {
  static const std::regex kName(R"(events\.out\.tfevents\.[^/]+)");
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, kName) && !core::temporary_file_owner(name) &&
        entry.is_regular_file(ec) && !entry.is_symlink(ec)) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TensorBoardLog::TensorBoardLog(const std::filesystem::path& dir, const LogStart& start,
                               const std::string& config_json) {
  const auto existing = event_files(dir);
  if (!existing.empty()) {
    // The run's own file, from its earlier part (or from a start that never reached a
    // checkpoint, whose steps this part takes again).
    const std::filesystem::path& file = existing.back();
    cut_to_step(file, start.global_step);
    file_.emplace(file, core::AppendFile::Open::kExisting);
    return;
  }
  const double started = now();
  const std::string name = "events.out.tfevents." + std::to_string(static_cast<int64_t>(started)) +
                           "." + core::host_name() + "." + std::to_string(::getpid());
  file_.emplace(dir / name, core::AppendFile::Open::kCreateNew);
  file_->append(frame(serialize::file_version_event(started)));
  file_->append(
      frame(serialize::text_event(started, 0, "config", markdown_code_block(config_json))));
  // A run resumed into a folder of its own from another's checkpoint: the epochs it carries.
  for (const auto& m : start.epochs) write_epoch(m);
}

void TensorBoardLog::step(const StepRecord& r) {
  file_->append(frame(serialize::scalars_event(
      now(), r.global_step,
      {{"step/train_loss", static_cast<float>(r.loss)}, {"step/lr", static_cast<float>(r.lr)}})));
}

void TensorBoardLog::epoch(const EpochMetrics& m) {
  write_epoch(m);
}

void TensorBoardLog::write_epoch(const EpochMetrics& m) {
  std::vector<serialize::ScalarValue> v = {
      {"epoch/epoch", static_cast<float>(m.epoch)},
      {"epoch/train_loss", static_cast<float>(m.train_loss)},
      {"epoch/train_acc", static_cast<float>(m.train_acc)},
      {"epoch/test_loss", static_cast<float>(m.test_loss)},
      {"epoch/test_acc", static_cast<float>(m.test_acc)},
  };
  if (m.has_val) {
    v.push_back({"epoch/val_loss", static_cast<float>(m.val_loss)});
    v.push_back({"epoch/val_acc", static_cast<float>(m.val_acc)});
  }
  v.push_back({"speed/sec_per_epoch", static_cast<float>(m.train_sec)});
  v.push_back({"speed/samples_per_sec", static_cast<float>(m.samples_per_sec())});
  v.push_back({"speed/comm_wait_sec", static_cast<float>(m.comm_wait_sec)});
  const auto per_rank = [&](const std::string& what, const std::vector<int64_t>& bytes) {
    for (size_t r = 0; r < bytes.size(); ++r) {
      v.push_back({"memory/" + what + "/rank" + std::to_string(r), static_cast<float>(bytes[r])});
    }
  };
  per_rank("optimizer_state_bytes", m.optimizer_state_bytes);
  per_rank("gradient_bytes", m.gradient_bytes);
  per_rank("peak_rss_bytes", m.peak_rss_bytes);
  per_rank("peak_gpu_bytes", m.peak_gpu_bytes);
  file_->append(frame(serialize::scalars_event(now(), m.global_step, v)));
}

}  // namespace dptrain::train
