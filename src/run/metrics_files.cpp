#include "run/metrics_files.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "run/layout.h"

namespace dptrain::run {

EpochTableFile::EpochTableFile(std::filesystem::path path, std::string header, Row row,
                               const std::vector<EpochMetrics>& earlier)
    : path_(std::move(path)), row_(std::move(row)), contents_(std::move(header)) {
  for (const auto& m : earlier) contents_ += row_(m) + "\n";
  // Even with no finished epochs: the file of an earlier part may hold epochs past this start.
  core::write_file_atomic(path_, contents_);
}

void EpochTableFile::epoch(const EpochMetrics& m) {
  contents_ += row_(m) + "\n";
  core::write_file_atomic(path_, contents_);
}

namespace {

// The shortest text that reads back as the same double (JSON's); nan and inf as Python writes
// them, which pandas and Lightning read.
std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return nlohmann::json(v).dump();
}

constexpr const char* kCsvHeader =
    "epoch,step,lr,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc,train_sec,eval_sec,"
    "samples_per_sec,comm_wait_sec\n";

std::string csv_row(const EpochMetrics& m) {
  // Without a held-out split the val cells stay empty, as Lightning leaves a metric not logged.
  const std::string val_loss = m.has_val ? number(m.val_loss) : "";
  const std::string val_acc = m.has_val ? number(m.val_acc) : "";
  return std::to_string(m.epoch) + "," + std::to_string(m.global_step) + "," + number(m.lr) + "," +
         number(m.train_loss) + "," + number(m.train_acc) + "," + val_loss + "," + val_acc + "," +
         number(m.test_loss) + "," + number(m.test_acc) + "," + number(m.train_sec) + "," +
         number(m.eval_sec) + "," + number(m.samples_per_sec()) + "," + number(m.comm_wait_sec);
}

}  // namespace

std::unique_ptr<RunLog> metrics_jsonl(const std::filesystem::path& dir,
                                      const std::vector<EpochMetrics>& earlier) {
  return std::make_unique<EpochTableFile>(
      dir / kMetricsFile, "", [](const EpochMetrics& m) { return to_json(m).dump(); }, earlier);
}

std::unique_ptr<RunLog> metrics_csv(const std::filesystem::path& dir,
                                    const std::vector<EpochMetrics>& earlier) {
  return std::make_unique<EpochTableFile>(dir / kMetricsCsvFile, kCsvHeader, csv_row, earlier);
}

}  // namespace dptrain::run
