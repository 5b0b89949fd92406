// One optimizer step in nanoGPT's order, over k micro-batches (train.accumulate_grad_batches):
// zero the gradients before the first; for each, forward under autocast and a scaled backward of
// its loss divided by the group's size, so that the summed gradients are those of the mean loss
// over every sample of the step; the ranks' gradients reduced after the last micro-batch alone
// (ddp's no_sync before it); then unscale, clip, set the scheduled rate, step unless inf/nan,
// rescale.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "train/session.h"

namespace dptrain::train {

struct MicroBatchOutput {
  torch::Tensor loss;  // the micro-batch's mean loss, undivided
  torch::Tensor logits;
};

// Forward and backward of micro-batch `index` (0-based) of a step of `group` micro-batches.
MicroBatchOutput accumulate_micro_batch(Session& s, const torch::Tensor& images,
                                        const torch::Tensor& labels, int64_t index, int64_t group);

// After the group's last micro-batch; false if the loss scaler skipped the step. `params`: the
// backend's optimizer_parameters().
bool take_optimizer_step(Session& s, const std::vector<torch::Tensor>& params, double lr);

// Scales the gradients of `params` so that their norm over every rank's shard is at most
// `max_norm`, by clip_grad_norm_'s rule with the squares summed in float64 (whether the backend
// shards or not, so that both clip alike); returns the norm before clipping. Every rank calls it.
double clip_gradient_norm(const std::vector<torch::Tensor>& params, double max_norm,
                          parallel::Backend& backend);

// How many micro-batches the step that begins at batch `first` of an epoch of `batches` takes:
// `k`, or what is left at the epoch's end.
int64_t group_size(int64_t first, int64_t batches, int64_t k);

// Optimizer steps in an epoch of `batches` batches, k per step (a short last group counts).
int64_t optimizer_steps_per_epoch(int64_t batches, int64_t k);

}  // namespace dptrain::train
