// When and where a run writes its checkpoints, what they are named, which is the newest, and
// which are pruned. What a checkpoint holds is train/checkpoint_file.h's.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "config/config.h"
#include "parallel/backend.h"
#include "train/checkpoint_file.h"

namespace dptrain::train {

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
  void within_epoch(int64_t epoch, int64_t batches_done, int64_t global_step,
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

// "epoch-0003.pt" after 3 finished epochs; "epoch-0003-batch-000017.pt" 17 batches into the 4th (a
// preemption). Names sort as training goes.
std::string checkpoint_name(int64_t finished_epochs, int64_t batches_done);
// The newest epoch or preemption checkpoint in `dir`, if any (best.pt does not count).
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir);
// The epoch and preemption checkpoints in `dir` written later in the run than `position`
// (checkpoint_position's finished epochs and batches), oldest first.
std::vector<std::filesystem::path> checkpoints_after(const std::filesystem::path& dir,
                                                     std::pair<int64_t, int64_t> position);
// Deletes all but the newest `keep` epoch checkpoints in `dir` (keep 0: none deleted).
void prune_checkpoints(const std::filesystem::path& dir, int64_t keep);

}  // namespace dptrain::train
