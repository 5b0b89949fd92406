// An optimizer's state as checkpoints hold it: the layout of PyTorch's `optimizer.state_dict()`,
//   {"state": {i: {"momentum_buffer": T} or {"step": n, "exp_avg": T, "exp_avg_sq": T}},
//    "param_groups": [{"params": [0, 1, ...]}]}
// with parameters numbered in the optimizer's order. The groups hold no options (learning rate,
// momentum, betas, weight decay): those are the experiment's, in the checkpoint's config, and a
// resumed run takes them from its own config, on every backend and ZeRO stage alike (the schedule
// sets the learning rate of each step). Nor could they be floats: PyTorch 1.13's weights_only
// reader knows no float opcode.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "optim/param_state.h"
#include "serialize/pickle.h"

namespace dptrain::optim {

// One entry per parameter, in the optimizer's order: nothing before its first step.
using StateList = std::vector<std::optional<ParamState>>;

// The state of `optimizer` over its parameters, in the layout above.
serialize::ValuePtr state_value(const torch::optim::Optimizer& optimizer);

// The per-parameter state in `value`, checked against an optimizer of `optimizer`'s kind over
// `params` (count, names of the state, shapes), each tensor copied to its parameter's dtype and
// device. Throws serialize::PickleError saying what does not fit.
StateList parse_state(const serialize::Value& value, const torch::optim::Optimizer& optimizer,
                      const std::vector<torch::Tensor>& params);

// Replaces the state of `optimizer` (over `params`, in that order) by `states`.
void apply_state(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params,
                 const StateList& states);

// Every parameter of `optimizer`, group after group: the numbering of the layout above.
std::vector<torch::Tensor> optimizer_params(const torch::optim::Optimizer& optimizer);

}  // namespace dptrain::optim
