// A checkpoint between the run folder's format (run/checkpoint_format.h: contents <-> bytes) and
// the objects it is taken from and applied to: the backend's model state, the optimizer's state
// (through the backend, which gathers and shards it under ZeRO) and the global CPU generator.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <memory>

#include "config/config.h"
#include "core/fs.h"
#include "parallel/backend.h"
#include "run/checkpoint_format.h"

namespace dptrain::train {

// The contents of a checkpoint at `point`. Every rank calls it (the optimizer's state is a
// collective under ZeRO); rank 0's contents are the whole. The optimizer must be the one the
// session made from config.optimizer: the file names its state's tensors after that kind.
run::CheckpointContents gather_checkpoint(const run::ResumePoint& point, parallel::Backend& backend,
                                          torch::optim::Optimizer& optimizer);

// Puts decoded contents (read from `path`, which errors name) into the backend, the optimizer
// and the global CPU generator, on every rank; returns where training goes on from.
run::ResumePoint apply_checkpoint(run::CheckpointContents contents,
                                  const std::filesystem::path& path, parallel::Backend& backend,
                                  torch::optim::Optimizer& optimizer);

// What `backend` wants of a checkpoint's rank states (run/checkpoint_format.h).
run::RankStateSpec rank_state_spec(parallel::Backend& backend);

// gather_checkpoint, then rank 0 writes it (atomically) to `path`. Every rank calls it.
void save_checkpoint(const std::filesystem::path& path, const config::Config& config,
                     const run::ResumePoint& point, parallel::Backend& backend,
                     torch::optim::Optimizer& optimizer);

// Reads the checkpoint at `path` (or in `file`, already open: the bytes every rank agreed on) and
// applies it; everything is checked before anything is applied (see read_checkpoint_file). The
// optimizer keeps `config`'s options (see optim/optimizer_state.h).
run::ResumePoint load_checkpoint(const std::filesystem::path& path, const config::Config& config,
                                 parallel::Backend& backend, torch::optim::Optimizer& optimizer);
run::ResumePoint load_checkpoint(const std::filesystem::path& path,
                                 const std::shared_ptr<const core::ReadOnlyFile>& file,
                                 const config::Config& config, parallel::Backend& backend,
                                 torch::optim::Optimizer& optimizer);

}  // namespace dptrain::train
