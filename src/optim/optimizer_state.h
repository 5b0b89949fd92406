// An optimizer's state as checkpoints hold it: the layout of PyTorch's `optimizer.state_dict()`,
//   {"state": {i: {"momentum_buffer": T} or {"step": n, "exp_avg": T, "exp_avg_sq": T}},
//    "param_groups": [{"params": [0, 1, ...]}]}
// with parameters numbered in the optimizer's order, all in one group (dptrain's optimizers have
// one). The groups hold no options (learning rate, momentum, betas, weight decay): those are the
// experiment's, in the checkpoint's config, and a resumed run takes them from its own config, on
// every backend and ZeRO stage alike (the schedule sets the learning rate of each step). Nor could
// they be floats: PyTorch 1.13's weights_only reader knows no float opcode.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "config/choices.h"
#include "optim/param_state.h"
#include "serialize/pickle.h"

namespace dptrain::optim {

// `states`, of an optimizer of `kind`, in the layout above.
serialize::ValuePtr state_value(config::OptimizerName kind, const StateList& states);

// The per-parameter state in `value`, checked against an optimizer of `kind` over `params`
// (count, names of the state, shapes), each tensor copied to its parameter's dtype and device.
// Throws serialize::PickleError saying what does not fit.
StateList parse_state(const serialize::Value& value, config::OptimizerName kind,
                      const std::vector<torch::Tensor>& params);

}  // namespace dptrain::optim
