#include "run/metrics.h"

#include "config/json_text.h"

#include <limits>
#include <nlohmann/json.hpp>

namespace dptrain::run {

nlohmann::json to_json(const EpochMetrics& m) {
  nlohmann::json j = {{"epoch", m.epoch},
                      {"train_loss", m.train_loss},
                      {"train_acc", m.train_acc},
                      {"test_loss", m.test_loss},
                      {"test_acc", m.test_acc},
                      {"test_correct", m.test_correct},
                      {"test_samples", m.test_samples},
                      {"train_sec", m.train_sec},
                      {"eval_sec", m.eval_sec},
                      {"comm_wait_sec", m.comm_wait_sec},
                      {"comm_bytes", m.comm_bytes},
                      {"comm_bytes_per_step", m.comm_bytes_per_step},
                      {"train_samples", m.train_samples},
                      {"batches", m.batches},
                      {"global_step", m.global_step},
                      {"lr", m.lr},
                      {"skipped_steps", m.skipped_steps},
                      {"optimizer_state_bytes", m.optimizer_state_bytes},
                      {"gradient_bytes", m.gradient_bytes},
                      {"peak_rss_bytes", m.peak_rss_bytes},
                      {"peak_gpu_bytes", m.peak_gpu_bytes},
                      {"samples_per_sec", m.samples_per_sec()}};
  if (m.has_val) {
    j["val_loss"] = m.val_loss;
    j["val_acc"] = m.val_acc;
  }
  if (m.loss_scale > 0) j["loss_scale"] = m.loss_scale;  // fp16's scaler only
  return j;
}

namespace {

// JSON has no nan: nlohmann writes it as null, which reads back as nan here.
double number(const nlohmann::json& j, const char* key) {
  const auto& v = j.at(key);
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

}  // namespace

EpochMetrics epoch_metrics_from_json(const nlohmann::json& j) {
  EpochMetrics m;
  m.epoch = config::integer_at(j, "epoch");
  m.train_loss = number(j, "train_loss");
  m.train_acc = number(j, "train_acc");
  m.test_loss = number(j, "test_loss");
  m.test_acc = number(j, "test_acc");
  m.test_correct = config::integer_at(j, "test_correct", 0);
  m.test_samples = config::integer_at(j, "test_samples", 0);
  m.has_val = j.contains("val_loss");
  if (m.has_val) {
    m.val_loss = number(j, "val_loss");
    m.val_acc = number(j, "val_acc");
  }
  m.train_sec = number(j, "train_sec");
  m.eval_sec = number(j, "eval_sec");
  m.comm_wait_sec = number(j, "comm_wait_sec");
  m.comm_bytes = config::integer_at(j, "comm_bytes", 0);  // absent before they were counted
  m.comm_bytes_per_step = j.value("comm_bytes_per_step", 0.0);
  m.train_samples = config::integer_at(j, "train_samples");
  m.batches = config::integer_at(j, "batches");
  m.global_step = config::integer_at(j, "global_step", 0);  // absent before gradient accumulation
  m.lr = j.value("lr", 0.0);
  m.skipped_steps = config::integer_at(j, "skipped_steps", 0);
  m.loss_scale = j.value("loss_scale", 0.0);
  // Absent before ZeRO.
  m.optimizer_state_bytes = config::integers_at(j, "optimizer_state_bytes");
  m.gradient_bytes = config::integers_at(j, "gradient_bytes");
  m.peak_rss_bytes = config::integers_at(j, "peak_rss_bytes");
  m.peak_gpu_bytes = config::integers_at(j, "peak_gpu_bytes");
  return m;
}

nlohmann::json to_json(const EpochTally& s) {
  return {{"loss_sum", s.loss},
          {"correct", s.correct},
          {"samples", s.samples},
          {"skipped_steps", s.skipped_steps},
          {"train_sec", s.train_sec}};
}

EpochTally epoch_tally_from_json(const nlohmann::json& j) {
  EpochTally s;
  s.loss = number(j, "loss_sum");
  s.correct = config::integer_at(j, "correct");
  s.samples = config::integer_at(j, "samples");
  s.skipped_steps = config::integer_at(j, "skipped_steps");
  s.train_sec = number(j, "train_sec");
  return s;
}

nlohmann::json to_json(const RunSummary& s) {
  nlohmann::json j = {
      {"test_acc", s.test_acc},
      {"test_loss", s.test_loss},
      {"test_correct", s.test_correct},
      {"test_samples", s.test_samples},
      {"train_loss", s.train_loss},
      {"train_acc", s.train_acc},
      {"sec_per_epoch", s.sec_per_epoch},
      {"eval_sec_per_epoch", s.eval_sec_per_epoch},
      {"samples_per_sec", s.samples_per_sec},
      {"epochs_run", s.epochs_run},
      {"backend", s.backend},
      {"devices", s.devices},
      {"world_size", s.world_size},
      {"threads", s.threads},
      {"precision", s.precision},
      {"libtorch_version", s.libtorch_version},
      {"cpu_kernels", s.cpu_kernels},
      {"stopped_early", s.stopped_early},
      {"stop_reason", s.stop_reason},
      {"best_epoch", s.best_epoch > 0 ? nlohmann::json(s.best_epoch) : nlohmann::json()},
      {"best_value", s.best_epoch > 0 ? nlohmann::json(s.best_value) : nlohmann::json()},
      {"command", s.command},
      {"started_at", s.started_at},
      {"finished_at", s.finished_at},
      {"hosts", s.hosts},
      {"dptrain_version", s.dptrain_version},
      {"skipped_files", s.skipped_files}};
  if (s.has_val) {
    j["val_loss"] = s.val_loss;
    j["val_acc"] = s.val_acc;
  }
  return j;
}

RunSummary summarize(const std::vector<EpochMetrics>& epochs) {
  RunSummary s;
  if (epochs.empty()) return s;
  const EpochMetrics& last = epochs.back();
  s.test_acc = last.test_acc;
  s.test_loss = last.test_loss;
  s.test_correct = last.test_correct;
  s.test_samples = last.test_samples;
  s.train_loss = last.train_loss;
  s.train_acc = last.train_acc;
  s.has_val = last.has_val;
  s.val_loss = last.val_loss;
  s.val_acc = last.val_acc;
  double train_sec = 0;
  double eval_sec = 0;
  int64_t samples = 0;
  for (const auto& m : epochs) {
    train_sec += m.train_sec;
    eval_sec += m.eval_sec;
    samples += m.train_samples;
  }
  s.epochs_run = static_cast<int64_t>(epochs.size());
  s.sec_per_epoch = train_sec / s.epochs_run;
  s.eval_sec_per_epoch = eval_sec / s.epochs_run;
  s.samples_per_sec = train_sec > 0 ? samples / train_sec : 0;
  return s;
}

}  // namespace dptrain::run
