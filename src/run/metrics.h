// What a run measures: one record per epoch (metrics.jsonl's lines) and the final summary.json,
// with their JSON forms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dptrain::run {

struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0;
  double train_acc = 0;
  double test_loss = 0;
  double test_acc = 0;
  int64_t test_correct = 0;  // test images classified right, of test_samples
  int64_t test_samples = 0;
  bool has_val = false;  // data.val_split > 0: the held-out figures below are set
  double val_loss = 0;
  double val_acc = 0;
  double train_sec = 0;  // the training pass alone, as d2l's timer measures it
  double eval_sec = 0;
  double comm_wait_sec =
      0;  // ddp: waiting for all-reduces backward did not hide (local SGD: its averagings)
  // ddp: the bytes rank 0 handed to collectives in the training pass (gradient buckets, local
  // SGD's averagings, the epoch's sums; see Communicator::payload_bytes), and per optimizer step.
  int64_t comm_bytes = 0;
  double comm_bytes_per_step = 0;
  int64_t train_samples = 0;
  int64_t batches = 0;        // batches trained on (micro-batches, with accumulation)
  int64_t global_step = 0;    // optimizer steps since the run began, at the epoch's end
  double lr = 0;              // the learning rate of the epoch's last optimizer step
  int64_t skipped_steps = 0;  // fp16: steps the loss scaler skipped for inf/nan gradients
  double loss_scale = 0;      // fp16: the scale at the epoch's end; 0 otherwise
  // Per rank, in rank order, at the epoch's end: the optimizer's state (ZeRO: the rank's shard)
  // and the gradient storage held between steps (.grad, ddp's flat gradients, ZeRO's shard).
  std::vector<int64_t> optimizer_state_bytes;
  std::vector<int64_t> gradient_bytes;
  // Per rank: the process's peak resident memory so far (getrusage's ru_maxrss), which a
  // network's activations dominate.
  std::vector<int64_t> peak_rss_bytes;
  // Per rank: the most bytes LibTorch's CUDA allocator has had allocated on its GPUs; 0 on CPUs.
  std::vector<int64_t> peak_gpu_bytes;
  double samples_per_sec() const { return train_sec > 0 ? train_samples / train_sec : 0; }
};

// An epoch's training figures while it runs, summed over its steps (and, once reduced, over the
// ranks): what a preemption's checkpoint keeps of an epoch cut short, and what its resumption
// adds to. Means come from them only when the epoch ends (EpochMetrics).
struct EpochTally {
  double loss = 0;      // the loss summed over samples
  int64_t correct = 0;  // samples classified right
  int64_t samples = 0;
  int64_t skipped_steps = 0;  // fp16: steps skipped for inf/nan gradients
  double train_sec = 0;
};

struct RunSummary {
  double test_acc = 0;
  double test_loss = 0;
  int64_t test_correct = 0;
  int64_t test_samples = 0;
  double train_loss = 0;
  double train_acc = 0;
  bool has_val = false;  // data.val_split > 0: the held-out figures of the final weights
  double val_loss = 0;
  double val_acc = 0;
  double sec_per_epoch = 0;       // mean training seconds per epoch
  double eval_sec_per_epoch = 0;  // mean evaluation seconds per epoch (val and test)
  double samples_per_sec = 0;
  int64_t epochs_run = 0;
  std::string backend;
  std::vector<std::string> devices;
  int world_size = 1;
  // Each rank's intra-op threads: another count sums floats in another order, so the same run
  // ends in (slightly) other parameters.
  int threads = 0;
  std::string precision;
  std::string libtorch_version;
  // Which vector code rank 0's CPU ran: dptrain's kernels' level and ATen's ("x86-64-v4, ATen
  // avx2"), since results differ in the last bits between them.
  std::string cpu_kernels;
  // Early stopping (best_epoch 0: not enabled, or nothing finite seen).
  bool stopped_early = false;
  std::string stop_reason;
  int64_t best_epoch = 0;
  double best_value = 0;
  // How the run was made, so that its folder alone can say: the command line, this invocation's
  // start and end (UTC, ISO 8601; a resumed run's are its last part's), each rank's host.
  std::vector<std::string> command;
  std::string started_at;
  std::string finished_at;
  std::vector<std::string> hosts;  // by rank
  std::string dptrain_version;
  int64_t skipped_files = 0;  // pictures data.on_bad_file "skip" left out of the data
};

nlohmann::json to_json(const EpochMetrics& m);
// Reads back what to_json wrote (checkpoints keep the finished epochs' records).
EpochMetrics epoch_metrics_from_json(const nlohmann::json& j);
nlohmann::json to_json(const EpochTally& s);
EpochTally epoch_tally_from_json(const nlohmann::json& j);
nlohmann::json to_json(const RunSummary& s);

// Sums up a finished run's epochs (the last epoch's accuracies, mean timings).
RunSummary summarize(const std::vector<EpochMetrics>& epochs);

}  // namespace dptrain::run
