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
// "parameters" and "optimizer" are rank 0's. Where the ranks differ (local SGD, PowerSGD: see
// parallel::Backend::gather_rank_states) each rank's own state is a raw record beside the pickle,
// rank_states/<rank>, n float32 values, which the record's "rank_states": {"ranks", "values"}
// declares: each rank reads its own on resume, and nothing else reads them.
// Formats 1 and 2 were TorchScript archives, which can carry code: they are refused, unread.
// Format 3 (without a run id) is refused too, with the hint to finish it with its own version.
//
// This file is the format alone, contents <-> bytes: taking the contents from a backend and an
// optimizer, and applying them, is train/checkpoint_io.h's.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/fs.h"
#include "model/state_dict.h"
#include "optim/param_state.h"
#include "run/resume_point.h"
#include "serialize/pickle.h"

namespace dptrain::run {

// What a checkpoint holds, as plain data.
struct CheckpointContents {
  ResumePoint point;
  std::vector<torch::Tensor> parameters;  // the model's, in its order
  std::vector<torch::Tensor> buffers;
  optim::StateList optimizer;  // the whole state, one entry per parameter
  torch::Tensor cpu_rng;       // the CPU generator's state
  // Written: every rank's own state, [ranks, n], where the ranks differ (undefined where they
  // agree). Read: this rank's row alone, or undefined.
  torch::Tensor rank_states;
  torch::Tensor own_rank_state;
};

// What a resumed job wants of a checkpoint's rank_states: `world` rows of `numel(optimizer)`
// values, `optimizer` being the checkpoint's own state; numel 0 (or no function): none, and a
// checkpoint's are left aside with a warning.
struct RankStateSpec {
  int world = 1;
  int rank = 0;
  std::function<int64_t(const optim::StateList&)> numel;
};
// The name of `rank`'s raw record of rank states.
std::string rank_state_record(int64_t rank);
// What a file of the model with `specs` may hold beyond the model's state, for a job of `world`
// ranks: rank states of max(world, 256) ranks (a job that keeps none, or fewer ranks, still opens
// a checkpoint of another rank count, to refuse it by name or to take rank 0's state). It bounds
// the file before it is hashed; no rank holds more than its own row.
constexpr int kRankStateRowsAlways = 256;
uint64_t rank_states_bound(const std::vector<model::StateSpec>& specs, int world);

// Writes `contents` to `path` atomically, as a checkpoint of `config`'s run (its model, resolved
// config and this process's thread count go into the record).
void write_checkpoint_file(const std::filesystem::path& path, const config::Config& config,
                           const CheckpointContents& contents);

// The checkpoint in `file` (already open: the bytes every rank agreed on; `path` names it), as
// `config`'s run resumes it: its tensors checked against the model's `parameters` and `buffers`
// (whose shapes, dtypes and devices they take) and its generator state against the generator's.
// Refuses, naming the file, a checkpoint of another model or other parameter shapes (a config
// error), and a damaged or foreign file (an I/O error); warns about other settings that differ
// from `config`. Nothing outside the returned contents changes.
CheckpointContents read_checkpoint_file(const std::filesystem::path& path,
                                        const std::shared_ptr<const core::ReadOnlyFile>& file,
                                        const config::Config& config,
                                        const std::vector<torch::Tensor>& parameters,
                                        const std::vector<torch::Tensor>& buffers,
                                        const RankStateSpec& ranks = {});

// The run a checkpoint belongs to; an I/O error naming `path` when it is no readable checkpoint.
std::string checkpoint_run_id(const std::filesystem::path& path);

// Where in the run a checkpoint was written: its finished epochs and the batches taken of the
// next (its file name's numbers, read from the record so that best.pt has them too). An I/O error
// naming `path` when it is no readable checkpoint.
Position checkpoint_position(const std::filesystem::path& path);

// The resolved config a checkpoint was written with, as JSON text (an experiment file's form);
// nothing when `path` is no checkpoint of this format or cannot be read (reading it for its
// weights then says what is wrong).
std::optional<std::string> checkpoint_config_text(const std::filesystem::path& path);

// A checkpoint's model state (evaluate, predict, --init-from): its parameters and buffers, in the
// model's order; their shapes are the caller's to check before copying them (see
// model::match_state).
struct CheckpointWeights {
  std::string model;                 // model.name of the run that wrote it
  std::vector<torch::Tensor> state;  // the parameters, then the buffers
};
// From a decoded torch.save file `root` read from `path`: nothing when it is no dptrain checkpoint
// (it lacks the format key); an I/O error naming `path` when it is one of another format or
// damaged.
std::optional<CheckpointWeights> checkpoint_weights(const std::filesystem::path& path,
                                                    const serialize::Value& root);

}  // namespace dptrain::run
