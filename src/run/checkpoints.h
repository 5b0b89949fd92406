// When and where a run writes its checkpoints, what they are named, which is the newest, and
// which are pruned. What a checkpoint holds is run/checkpoint_format.h's.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "config/config.h"
#include "run/checkpoint_format.h"

namespace dptrain::run {

// When a run writes checkpoints: every checkpoint.every_epochs epochs (keeping the newest
// keep_last), best.pt when the watched figure improves (save_best), and on demand. Every rank
// calls, with `gather`, which takes the contents (a collective under ZeRO, where every rank sends
// its shard of the optimizer's state) and is called only when a checkpoint is due; only the
// writer (rank 0) writes.
class Checkpointer {
 public:
  using Gather = std::function<CheckpointContents()>;

  Checkpointer(const config::Config& config, std::filesystem::path dir, bool writer);

  // Writes `name` in the checkpoint folder now; returns its path.
  std::filesystem::path save(const std::string& name, const Gather& gather);
  // Within an epoch after each optimizer step (`global_step` of them so far): every
  // checkpoint.every_steps steps, the checkpoint a preemption would write (keep_last applies).
  void within_epoch(int64_t epoch, int64_t batches_done, int64_t global_step, const Gather& gather);
  // After the evaluation of `epoch` (1-based), its optimizer steps ending at `global_step`, with
  // `gather` pointing at the next epoch; `last`: the run ends there although epochs remain
  // (train.max_steps).
  void after_epoch(int64_t epoch, int64_t global_step, bool improved, bool last,
                   const Gather& gather);

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
                                                     Position position);
// Deletes all but the newest `keep` epoch checkpoints in `dir` (keep 0: none deleted).
void prune_checkpoints(const std::filesystem::path& dir, int64_t keep);

}  // namespace dptrain::run
