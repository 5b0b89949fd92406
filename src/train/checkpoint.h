// Checkpoints: everything a run needs to go on as if it had never stopped. The model's
// parameters, the optimizer's state, the loss scaler, the early-stopping watch (and the best
// weights it holds),
// the finished epochs' records, where in an epoch it stopped, the CPU random generator, and the
// resolved config. One file each, written atomically (temporary file, then rename) by rank 0.
// The samplers need no state of their own: an epoch's order follows from the seed and its number.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "config/config.h"
#include "parallel/backend.h"
#include "train/early_stopping.h"
#include "train/grad_scaler.h"
#include "train/metrics.h"

namespace dptrain::train {

// Where training stands, besides the tensors the backend and optimizer own.
struct Progress {
  int64_t epoch = 0;                 // the epoch under way or next (0-based)
  int64_t steps_done = 0;            // its batches already taken (non-zero after a preemption)
  int64_t global_step = 0;           // optimizer steps taken since the run began
  TrainingSums partial;              // those steps' sums over every rank
  std::vector<EpochMetrics> epochs;  // the finished epochs' records
  EarlyStopping::State early_stopping;
  std::vector<torch::Tensor> best_weights;  // early stopping's, when it restores them
  GradScaler::State scaler;                 // fp16's loss scale
};

void write_checkpoint(const std::filesystem::path& path, const config::Config& config,
                      const Progress& progress, parallel::Backend& backend,
                      const torch::optim::Optimizer& optimizer);

// Loads a checkpoint into `backend` and `optimizer` (on every rank) and returns the progress.
// Refuses, naming the file, a checkpoint of another model or other parameter shapes; warns about
// other settings that differ from `config`.
Progress read_checkpoint(const std::filesystem::path& path, const config::Config& config,
                         parallel::Backend& backend, torch::optim::Optimizer& optimizer);

// A checkpoint's parameters alone (evaluate and predict), in the model's order.
struct CheckpointWeights {
  std::string model;  // model.name of the run that wrote it
  std::vector<torch::Tensor> parameters;
};
CheckpointWeights read_checkpoint_weights(const std::filesystem::path& path);

// checkpoint.dir, or <output>/checkpoints when it is empty.
std::filesystem::path checkpoint_dir(const config::Config& config,
                                     const std::filesystem::path& output_dir);

// When a run writes checkpoints: every checkpoint.every_epochs epochs (keeping the newest
// keep_last), best.pt when the watched figure improves (save_best), and on demand. Only the
// writer (rank 0) writes; every rank calls (a ZeRO optimizer's shards are gathered first).
class Checkpointer {
 public:
  Checkpointer(const config::Config& config, std::filesystem::path dir, bool writer);

  // Writes `name` in the checkpoint folder now; returns its path.
  std::filesystem::path save(const std::string& name, const Progress& progress,
                             parallel::Backend& backend, torch::optim::Optimizer& optimizer);
  // Within an epoch after each optimizer step (`global_step` of them so far): every
  // checkpoint.every_steps steps, the checkpoint a preemption would write (keep_last applies).
  // Every rank may call; `progress` is called only when one is due.
  void within_epoch(int64_t epoch, int64_t steps_done, int64_t global_step,
                    const std::function<Progress()>& progress, parallel::Backend& backend,
                    torch::optim::Optimizer& optimizer);
  // After the evaluation of `epoch` (1-based), with `progress` pointing at the next one; `last`:
  // the run ends there although epochs remain (train.max_steps).
  void after_epoch(int64_t epoch, bool improved, bool last, const Progress& progress,
                   parallel::Backend& backend, torch::optim::Optimizer& optimizer);

 private:
  const config::Config& config_;
  std::filesystem::path dir_;
  bool writer_;
};

// "epoch-0003.pt" after 3 finished epochs; "epoch-0003-step-000017.pt" 17 steps into the 4th (a
// preemption). Names sort as training goes.
std::string checkpoint_name(int64_t finished_epochs, int64_t steps_done);
// The newest epoch or preemption checkpoint in `dir`, if any (best.pt does not count).
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir);
// Deletes all but the newest `keep` epoch checkpoints in `dir` (keep 0: none deleted).
void prune_checkpoints(const std::filesystem::path& dir, int64_t keep);

}  // namespace dptrain::train
