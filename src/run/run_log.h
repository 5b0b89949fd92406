// Where a run's figures go: the console, metrics.jsonl, metrics.csv, TensorBoard. Each sink is a
// RunLog fed the trainer's own records, so that a new sink touches no training code.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "run/metrics.h"

namespace dptrain::run {

// Every log.every_steps optimizer steps.
struct StepRecord {
  int64_t epoch = 0;  // 1-based
  int64_t batch = 0;  // batches done in the epoch
  int64_t batches = 0;
  int64_t global_step = 0;  // optimizer steps since the run began, this one included
  double loss = 0;          // the step's last micro-batch's loss, on this rank
  double lr = 0;
};

class RunLog {
 public:
  virtual ~RunLog() = default;
  virtual void step(const StepRecord& /*record*/) {}
  // A finished epoch's figures, evaluated.
  virtual void epoch(const EpochMetrics& /*m*/) {}
};

// The sinks of a rank, fed in the order they were added.
class RunLogs : public RunLog {
 public:
  void add(std::unique_ptr<RunLog> sink) { sinks_.push_back(std::move(sink)); }
  void step(const StepRecord& record) override {
    for (auto& s : sinks_) s->step(record);
  }
  void epoch(const EpochMetrics& m) override {
    for (auto& s : sinks_) s->epoch(m);
  }

 private:
  std::vector<std::unique_ptr<RunLog>> sinks_;
};

}  // namespace dptrain::run
