// The run folder's per-epoch tables: metrics.jsonl (one JSON object per line) and metrics.csv
// (Lightning's CSVLogger shape: a header, then a row per epoch). Each is rewritten whole and
// atomically after every epoch (they are small), so that it is complete at every moment and a
// resumed run, which starts from its checkpoint's finished epochs, never repeats one.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "run/run_log.h"

namespace dptrain::run {

class EpochTableFile : public RunLog {
 public:
  using Row = std::function<std::string(const EpochMetrics&)>;
  // Starts with `earlier` (a resumed run's finished epochs) and writes them out at once, in place
  // of whatever the file held.
  EpochTableFile(std::filesystem::path path, std::string header, Row row,
                 const std::vector<EpochMetrics>& earlier);
  void epoch(const EpochMetrics& m) override;

 private:
  std::filesystem::path path_;
  Row row_;
  std::string contents_;
};

// <dir>/metrics.jsonl and <dir>/metrics.csv.
std::unique_ptr<RunLog> metrics_jsonl(const std::filesystem::path& dir,
                                      const std::vector<EpochMetrics>& earlier);
std::unique_ptr<RunLog> metrics_csv(const std::filesystem::path& dir,
                                    const std::vector<EpochMetrics>& earlier);

}  // namespace dptrain::run
