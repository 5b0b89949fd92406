// The per-parameter state of dptrain's optimizers (SGD's momentum buffer; Adam's and AdamW's step
// count and moments) as plain tensors, so that ZeRO can cut it into shards and join it again, and
// so that its size can be reported. LibTorch keeps it in a map keyed by the parameter.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace dptrain::optim {

struct ParamState {
  int64_t step = 0;                    // Adam, AdamW: the steps taken; SGD: 0
  std::vector<torch::Tensor> tensors;  // SGD: {momentum}; Adam, AdamW: {exp_avg, exp_avg_sq}
};

// `param`'s state in `optimizer`, or nothing before its first step (or SGD without momentum).
std::optional<ParamState> read_param_state(const torch::optim::Optimizer& optimizer,
                                           const torch::Tensor& param);
// Sets `param`'s state in `optimizer` (an optimizer of the kind that `state` was read from).
void write_param_state(torch::optim::Optimizer& optimizer, const torch::Tensor& param,
                       const ParamState& state);
// The bytes of every state tensor `optimizer` holds.
int64_t state_bytes(const torch::optim::Optimizer& optimizer);

// A whole optimizer's state, one entry per parameter in the optimizer's order: nothing for a
// parameter before its first step. What checkpoints hold, whatever backend or ZeRO stage wrote it.
using StateList = std::vector<std::optional<ParamState>>;

// Every parameter of `optimizer`, group after group: the numbering of a StateList.
std::vector<torch::Tensor> optimizer_params(const torch::optim::Optimizer& optimizer);
// The state of `optimizer` over `params` (its own, in its order).
StateList read_state(const torch::optim::Optimizer& optimizer,
                     const std::vector<torch::Tensor>& params);
// Replaces the state of `optimizer` (over `params`, in that order) by `states`.
void apply_state(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params,
                 const StateList& states);

}  // namespace dptrain::optim
