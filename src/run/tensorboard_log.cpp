#include "run/tensorboard_log.h"

#include <unistd.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/wall_clock.h"
#include "serialize/tensorboard_event.h"
#include "serialize/tfrecord.h"

namespace dptrain::run {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string frame(const std::string& event) {
  return serialize::tfrecord_frame(event);
}

// Rebuilds the run's file to the point a new part resumes from: the records of its earlier parts
// up to the checkpoint's step, of which the epoch figures only where they are the checkpoint's
// epochs in order (an abandoned branch's, or a killed part's past its checkpoint, go). A torn last
// record (the part was killed mid-write) goes too, and so does anything that is not a well-formed
// event. A file with nothing to cut is
// left as it is (a TensorBoard reading it need not reload). Returns how many of the checkpoint's
// epochs the file holds: the rest are the caller's to append.
size_t rebuild_to(const std::filesystem::path& file, const LogStart& start) {
  std::string kept;
  size_t present = 0;
  {
    const core::MappedFile mapped(file);  // read in place, not copied
    const std::string_view bytes = mapped.bytes();
    const serialize::TfRecordScan scan = serialize::scan_tfrecords(bytes);
    if (!scan.complete) {
      spdlog::warn(
          "{}: dropped {} bytes after the last whole record (a killed run's last write, or damage)",
          file.string(), bytes.size() - scan.valid_bytes);
    }
    for (const auto record : scan.records) {
      const auto header = serialize::decode_event_header(record);
      if (!header || header->step > start.global_step) continue;
      if (header->epoch_figures) {
        const bool next_epoch =
            present < start.epochs.size() && header->step == start.epochs[present].global_step;
        if (!next_epoch) continue;
        ++present;
      }
      kept += serialize::tfrecord_frame(record);
    }
    if (kept == bytes) return present;
  }
  core::write_file_atomic(file, kept);
  return present;
}

// TensorBoard's HParams view: the resolved config's settings under dotted keys ("optimizer.lr"),
// numbers, strings and booleans as they are, lists as their JSON text.
void add_hparams(const nlohmann::json& node, const std::string& key,
                 std::vector<serialize::HParamValue>& out) {
  if (node.is_object()) {
    for (const auto& [name, value] : node.items()) {
      add_hparams(value, key.empty() ? name : key + "." + name, out);
    }
  } else if (node.is_boolean()) {
    out.push_back({key, node.get<bool>()});
  } else if (node.is_number()) {
    out.push_back({key, node.get<double>()});
  } else if (node.is_string()) {
    out.push_back({key, node.get<std::string>()});
  } else if (node.is_array()) {
    out.push_back({key, node.dump()});
  }
}

std::vector<serialize::HParamValue> hparams_of(const nlohmann::json& config) {
  std::vector<serialize::HParamValue> values;
  add_hparams(config, "", values);
  return values;
}

// The figures the HParams view tabulates beside the settings: the same in every run, since
// TensorBoard takes one run's list for all.
const std::vector<std::string> kHParamsMetrics = {"epoch/test_acc",  "epoch/test_loss",
                                                  "epoch/train_acc", "epoch/train_loss",
                                                  "epoch/val_acc",   "epoch/val_loss"};

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
                               const nlohmann::json& config) {
  const auto existing = event_files(dir);
  if (!existing.empty()) {
    // The run's own file, from its earlier part (or from a start that never reached a
    // checkpoint, whose steps this part takes again), with the epochs the checkpoint holds.
    const std::filesystem::path& file = existing.back();
    const size_t present = rebuild_to(file, start);
    file_.emplace(file, core::AppendFile::Open::kExisting);
    for (size_t e = present; e < start.epochs.size(); ++e) write_epoch(start.epochs[e]);
    return;
  }
  const double started = now();
  const std::string name = "events.out.tfevents." + std::to_string(static_cast<int64_t>(started)) +
                           "." + core::host_name() + "." + std::to_string(::getpid());
  file_.emplace(dir / name, core::AppendFile::Open::kCreateNew);
  file_->append(frame(serialize::file_version_event(started)));
  file_->append(
      frame(serialize::text_event(started, 0, "config", markdown_code_block(config.dump(2)))));
  const auto hparams = hparams_of(config);
  file_->append(frame(serialize::hparams_experiment_event(started, hparams, kHParamsMetrics)));
  file_->append(frame(serialize::hparams_session_start_event(started, hparams)));
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
  v.push_back({"speed/comm_bytes_per_step", static_cast<float>(m.comm_bytes_per_step)});
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

}  // namespace dptrain::run
