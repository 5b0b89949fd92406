// The experiment: plain structs, every field with its default (schema.cpp declares each key's
// name, range and doc). Loading, merging and checking live in load.h; nothing outside src/config/
// sees JSON parsing of the experiment file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/choices.h"
#include "config/transforms.h"

namespace dptrain::config {

struct DataConfig {
  Dataset dataset = Dataset::kFashionMnist;
  std::string dir;  // IDX: empty searches $DPTRAIN_DATA_DIR, ./data/<dataset>, system; folder: DIR
  int64_t batch_size = 256;  // global: summed over every device
  bool drop_last = false;
  DataPlacement placement = DataPlacement::kAuto;  // auto: device on GPUs, host on CPUs
  int64_t num_workers = 0;       // host placement: assembling threads; 0: the training thread
  int64_t prefetch_batches = 0;  // host placement: batches ready ahead; 0: 2 per worker
  bool pin_memory = false;       // host placement to a GPU: pinned buffers, async copies
  double val_split = 0;          // training set share held out for validation, by the seed
  // What the data is, filled in from it in the run's resolved config (config.json, checkpoints):
  // given, the data must be so (evaluate with a run's config checks its test folder's classes).
  int64_t channels = 0;                 // 0: the data's (IDX 1; folder 3, as ImageFolder's RGB)
  std::vector<std::string> classes;     // empty: the data's, by label
  std::vector<int64_t> image_size;      // [H, W]; empty: the data's
  int64_t max_image_pixels = 89478485;  // a picture declaring more is refused (PIL's bomb guard)
  // A folder's picture that cannot be listed or decoded: the run ends naming it, or it is left
  // out (every picture decoded once when the data is opened) and counted.
  BadFiles on_bad_file = BadFiles::kError;
  // Applied in order to each training (evaluation: validation and test) sample; draws seeded by
  // (seed, epoch, sample index).
  std::vector<TransformSpec> train_transforms;
  std::vector<TransformSpec> eval_transforms;
};

struct ModelConfig {
  std::string name = "lenet";
  double init_std = 0.01;  // weights ~ N(0, init_std^2) (d2l)
  // BatchNorm's statistics over the global batch under ddp (torch.nn.SyncBatchNorm).
  bool sync_batchnorm = false;
  // What the model takes and gives: no keys of their own, but the data's (model::model_config_for).
  int64_t in_channels = 1;
  int64_t num_classes = 10;
  std::vector<int64_t> input_size = {28, 28};  // [H, W]
};

struct OptimizerConfig {
  OptimizerName name = OptimizerName::kSgd;
  double lr = 0.2;
  double momentum = 0.0;                     // sgd
  bool nesterov = false;                     // sgd, with momentum
  std::vector<double> betas = {0.9, 0.999};  // adam, adamw
  double eps = 1e-8;                         // adam, adamw
  double weight_decay = 0.0;                 // sgd, adam: L2 in the gradient; adamw: decoupled
  double grad_clip_norm = 0;  // clip the gradients' global L2 norm to this; 0: no clipping
};

// The learning rate as a function of the optimizer step (see optim/schedule.h).
struct SchedulerConfig {
  SchedulerName name = SchedulerName::kNone;
  int64_t step_size = 1;      // step: optimizer steps between decays
  double gamma = 0.1;         // step: the decay factor
  double min_lr = 0;          // cosine: where it ends
  int64_t warmup_steps = 0;   // linear warm-up, in optimizer steps ...
  int64_t warmup_epochs = 0;  // ... or in epochs (not both)
};

struct TrainConfig {
  int64_t epochs = 10;
  int64_t limit_train_batches = 0;      // 0: the whole training set each epoch
  int64_t limit_eval_batches = 0;       // 0: the whole test set each evaluation
  int64_t accumulate_grad_batches = 1;  // micro-batches summed into one optimizer step
  int64_t max_steps = 0;                // stop after this many optimizer steps; 0: no limit
};

struct ParallelConfig {
  Backend backend = Backend::kSingle;
  // single: one device. dp: one replica per entry, repeats allowed ("auto" alone: every GPU, else
  // the CPU). ddp: one rank per entry (the same "auto"); under a launcher a rank takes the entry of
  // its local rank, or the only entry.
  std::vector<std::string> devices = {"auto"};
  std::string output_device;  // dp: where outputs are gathered; empty: the first device
  DistBackend dist_backend = DistBackend::kAuto;  // ddp: auto: nccl on GPUs, gloo on CPUs
  double bucket_mb = 25;     // ddp: gradient bucket size, as DDP's bucket_cap_mb
  double timeout_s = 600;    // ddp: how long a rank waits for the others
  int64_t max_restarts = 0;  // ddp under dptrain's launcher: restarts after a rank fails
  int64_t zero_stage = 0;    // ddp: 1 shards the optimizer's state over the ranks, 2 gradients too
  // ddp: how gradient buckets cross the network (DDP's communication hooks); see
  // parallel/grad_compression.h.
  GradCompression grad_compression = GradCompression::kNone;
  int64_t powersgd_rank = 1;            // the rank of PowerSGD's low-rank approximation
  int64_t powersgd_start_step = 100;    // plain all-reduces for the first N optimizer steps
  double powersgd_min_compression = 2;  // a matrix is compressed only when this many times smaller
  // ddp: after local_sgd_warmup_steps plain steps, each rank steps alone and the ranks average
  // their parameters every local_sgd steps (post-local SGD); 0: every step all-reduces.
  int64_t local_sgd = 0;
  int64_t local_sgd_warmup_steps = 0;
};

struct EarlyStoppingConfig {
  bool enabled = false;
  Monitor monitor = Monitor::kValLoss;
  MonitorMode mode = MonitorMode::kAuto;  // auto: max for accuracies, min for losses
  int64_t patience = 3;                   // evaluations without improvement before stopping
  double min_delta = 0;                   // an improvement must beat the best by more than this
  bool restore_best = true;               // end with the best epoch's weights, and test those
  bool stop_on_non_finite = true;         // stop at once when the monitored value is nan or inf
};

struct CheckpointConfig {
  std::string dir;           // empty: <output>/checkpoints
  int64_t every_epochs = 1;  // a checkpoint every N epochs; 0: none
  int64_t every_steps = 0;   // and one every N optimizer steps within epochs; 0: none
  int64_t keep_last = 2;     // epoch checkpoints kept, newest first; 0: all
  bool save_best = false;    // also best.pt, the epoch with the best early_stopping.monitor
};

struct RuntimeConfig {
  // Intra-op threads of each compute thread (a process, a ddp rank, a dp replica); 0: the cores
  // shared out between the ranks and CPU replicas on this machine.
  int64_t threads = 0;
};

struct LogConfig {
  LogLevel level = LogLevel::kInfo;
  int64_t every_steps = 0;                      // a progress line every N training steps; 0: none
  ProgressMode progress = ProgressMode::kAuto;  // auto: a live line when stdout is a terminal
  bool tensorboard = true;                      // an event file in the run folder
};

struct Config {
  std::string name = "d2l-lenet";
  int64_t seed = 42;
  DataConfig data;
  ModelConfig model;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  TrainConfig train;
  ParallelConfig parallel;
  EarlyStoppingConfig early_stopping;
  CheckpointConfig checkpoint;
  Precision precision = Precision::kFp32;  // fp16: GPUs only, with loss scaling
  RuntimeConfig runtime;
  LogConfig log;
};

// Every key with its value, nested as the experiment file nests them.
nlohmann::json to_json(const Config& config);

}  // namespace dptrain::config
