#include "optim/param_state.h"

#include "core/error.h"
#include "core/torch_compat.h"

namespace dptrain::optim {
namespace {

using torch::optim::AdamParamState;
using torch::optim::AdamWParamState;
using torch::optim::OptimizerParamState;
using torch::optim::SGDParamState;

core::Error unknown_state() {
  return core::Error(core::ErrorCode::kNotSupported,
                     "ZeRO: an optimizer whose state dptrain cannot shard",
                     "use optimizer.name sgd, adam or adamw");
}

ParamState tensors_of(const OptimizerParamState& state) {
  if (const auto* sgd = dynamic_cast<const SGDParamState*>(&state)) {
    return {0, {sgd->momentum_buffer()}};
  }
  // amsgrad's max_exp_avg_sq is left out: dptrain never turns amsgrad on.
  if (const auto* adam = dynamic_cast<const AdamParamState*>(&state)) {
    return {adam->step(), {adam->exp_avg(), adam->exp_avg_sq()}};
  }
  if (const auto* adamw = dynamic_cast<const AdamWParamState*>(&state)) {
    return {adamw->step(), {adamw->exp_avg(), adamw->exp_avg_sq()}};
  }
  throw unknown_state();
}

template <typename State>
std::unique_ptr<OptimizerParamState> adam_state(const ParamState& s) {
  auto state = std::make_unique<State>();
  state->step(s.step);
  state->exp_avg(s.tensors.at(0));
  state->exp_avg_sq(s.tensors.at(1));
  return state;
}

std::unique_ptr<OptimizerParamState> make_state(const torch::optim::Optimizer& optimizer,
                                                const ParamState& s) {
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) {
    auto state = std::make_unique<SGDParamState>();
    state->momentum_buffer(s.tensors.at(0));
    return state;
  }
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) return adam_state<AdamParamState>(s);
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) return adam_state<AdamWParamState>(s);
  throw unknown_state();
}

}  // namespace

std::optional<ParamState> read_param_state(const torch::optim::Optimizer& optimizer,
                                           const torch::Tensor& param) {
  const auto& states = optimizer.state();
  const auto found = states.find(core::compat::optimizer_state_key(param));
  if (found == states.end()) return std::nullopt;
  return tensors_of(*found->second);
}

void write_param_state(torch::optim::Optimizer& optimizer, const torch::Tensor& param,
                       const ParamState& state) {
  optimizer.state()[core::compat::optimizer_state_key(param)] = make_state(optimizer, state);
}

int64_t state_bytes(const torch::optim::Optimizer& optimizer) {
  int64_t bytes = 0;
  for (const auto& entry : optimizer.state()) {
    for (const auto& t : tensors_of(*entry.second).tensors) {
      if (t.defined()) bytes += t.numel() * static_cast<int64_t>(t.element_size());
    }
  }
  return bytes;
}

std::vector<torch::Tensor> optimizer_params(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (const auto& group : optimizer.param_groups()) {
    params.insert(params.end(), group.params().begin(), group.params().end());
  }
  return params;
}

StateList read_state(const torch::optim::Optimizer& optimizer,
                     const std::vector<torch::Tensor>& params) {
  StateList states;
  for (const auto& p : params) states.push_back(read_param_state(optimizer, p));
  return states;
}

void apply_state(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params,
                 const StateList& states) {
  optimizer.state().clear();
  for (size_t i = 0; i < params.size() && i < states.size(); ++i) {
    if (states[i]) write_param_state(optimizer, params[i], *states[i]);
  }
}

}  // namespace dptrain::optim
