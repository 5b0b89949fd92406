// A checkpoint file: everything a run needs to go on as if it had never stopped. The model's
// parameters and buffers, the optimizer's state, the loss scaler, the early-stopping watch (and the
// best weights it holds), the finished epochs' records, where in an epoch it stopped, the CPU
// random generator, and the resolved config. The samplers need no state of their own: an epoch's
// order follows from the seed and its number.
//
// Format 4 is a torch.save file (serialize/torch_file.h) of a dict that Python opens with
// `torch.load(path, weights_only=True)`:
//   {"dptrain_checkpoint": 4, "record": <JSON text>, "parameters": [T, ...], "buffers": [T, ...],
//    "best_weights": [T, ...] (parameters, then buffers), "optimizer": <optimizer.state_dict()
//    layout>, "cpu_rng": T}
// Formats 1 and 2 were TorchScript archives, which can carry code: they are refused, unread.
// Format 3 (without a run id) is refused too, with the hint to finish it with its own version.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/fs.h"
#include "parallel/backend.h"
#include "serialize/pickle.h"
#include "train/early_stopping.h"
#include "train/grad_scaler.h"
#include "train/metrics.h"

namespace dptrain::train {

// Where training stands, besides the tensors the backend and optimizer own.
struct Progress {
  std::string run_id;                // the run it belongs to (its output folder's run.json)
  int64_t epoch = 0;                 // the epoch under way or next (0-based)
  int64_t batches_done = 0;          // its batches already taken (non-zero after a preemption)
  int64_t global_step = 0;           // optimizer steps taken since the run began
  TrainingSums partial;              // those steps' sums over every rank
  std::vector<EpochMetrics> epochs;  // the finished epochs' records
  EarlyStopping::State early_stopping;
  std::vector<torch::Tensor> best_weights;  // early stopping's, when it restores them
  GradScaler::State scaler;                 // fp16's loss scale
};

// Written atomically. Under ZeRO every rank must have called ZeroOptimizer::consolidate() first.
void write_checkpoint(const std::filesystem::path& path, const config::Config& config,
                      const Progress& progress, parallel::Backend& backend,
                      torch::optim::Optimizer& optimizer);

// Loads a checkpoint into `backend` and `optimizer` (on every rank) and returns the progress.
// Refuses, naming the file, a checkpoint of another model or other parameter shapes (a config
// error), and a damaged or foreign file (an I/O error), having changed nothing; warns about other
// settings that differ from `config`. The optimizer keeps `config`'s options (see
// optim/optimizer_state.h).
Progress read_checkpoint(const std::filesystem::path& path, const config::Config& config,
                         parallel::Backend& backend, torch::optim::Optimizer& optimizer);
// The same from `file`, already open (the bytes every rank agreed on); `path` names it.
Progress read_checkpoint(const std::filesystem::path& path,
                         const std::shared_ptr<const core::ReadOnlyFile>& file,
                         const config::Config& config, parallel::Backend& backend,
                         torch::optim::Optimizer& optimizer);

// The run a checkpoint belongs to; an I/O error naming `path` when it is no readable checkpoint.
std::string checkpoint_run_id(const std::filesystem::path& path);

// Where in the run a checkpoint was written: its finished epochs and the batches taken of the
// next (its file name's numbers, read from the record so that best.pt has them too). An I/O error
// naming `path` when it is no readable checkpoint.
std::pair<int64_t, int64_t> checkpoint_position(const std::filesystem::path& path);

// The resolved config a checkpoint was written with, as JSON text (an experiment file's form);
// nothing when `path` is no checkpoint of this format or cannot be read (reading it for its
// weights then says what is wrong).
std::optional<std::string> checkpoint_config_text(const std::filesystem::path& path);

// A checkpoint's model state (evaluate, predict, --init-from): its parameters and buffers, in the
// model's order; their
// shapes are the caller's to check before copying them (see model::match_state).
struct CheckpointWeights {
  std::string model;                 // model.name of the run that wrote it
  std::vector<torch::Tensor> state;  // the parameters, then the buffers
};
// From a decoded torch.save file `root` read from `path`: nothing when it is no dptrain checkpoint
// (it lacks the format key); an I/O error naming `path` when it is one of another format or
// damaged.
std::optional<CheckpointWeights> checkpoint_weights(const std::filesystem::path& path,
                                                    const serialize::Value& root);

}  // namespace dptrain::train
