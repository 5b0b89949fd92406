#include "parallel/zero_optimizer.h"

#include "core/error.h"
#include "optim/param_state.h"

namespace dptrain::parallel {

ZeroOptimizer::ZeroOptimizer(OptimizerFactory make, ZeroShard& shard)
    : ZeroOptimizer(shard, make({shard.master()})) {}

ZeroOptimizer::ZeroOptimizer(ZeroShard& shard,
                             std::unique_ptr<torch::optim::Optimizer> shard_optimizer)
    : torch::optim::Optimizer({torch::optim::OptimizerParamGroup(shard.parameters())},
                              shard_optimizer->defaults().clone()),
      shard_(shard),
      shard_optimizer_(std::move(shard_optimizer)) {}

torch::Tensor ZeroOptimizer::step(LossClosure /*closure*/) {
  // The schedule sets the rate on this optimizer's group; the shard's optimizer steps with it.
  shard_optimizer_->param_groups().at(0).options().set_lr(param_groups().at(0).options().get_lr());
  shard_.load_master();
  shard_optimizer_->step();
  shard_.all_gather_parameters();
  return {};
}

optim::StateList ZeroOptimizer::gather_state() {
  const std::optional<optim::ParamState> mine =
      optim::read_param_state(*shard_optimizer_, shard_.master());
  const bool keeps = shard_.layout().rank() == 0;
  const std::vector<torch::Tensor>& params = shard_.parameters();
  // Every rank steps together, so either all have state or none has.
  if (!mine) return keeps ? optim::StateList(params.size()) : optim::StateList{};
  std::vector<optim::ParamState> joined(params.size(), optim::ParamState{mine->step, {}});
  for (size_t k = 0; k < mine->tensors.size(); ++k) {
    // A collective: every rank takes part, though only rank 0 keeps what it gathers.
    const torch::Tensor flat = shard_.gather(
        mine->tensors[k], "the gathering of optimizer state " + std::to_string(k) + " to rank 0");
    if (!keeps) continue;
    // Copies, not views of the padded whole: a checkpoint saves each as a tensor of its own.
    const std::vector<torch::Tensor> per_param = shard_.layout().unflatten(flat, params);
    for (size_t i = 0; i < params.size(); ++i) joined[i].tensors.push_back(per_param[i].clone());
  }
  if (!keeps) return {};
  return optim::StateList(joined.begin(), joined.end());
}

void ZeroOptimizer::load_state(const optim::StateList& whole) {
  std::vector<optim::ParamState> states;
  for (const auto& s : whole) {
    if (s) states.push_back(*s);
  }
  if (states.empty()) {  // saved before the first step
    shard_optimizer_->state().clear();
    return;
  }
  if (states.size() != whole.size()) {
    throw core::Error(core::ErrorCode::kIo,
                      "ZeRO: the checkpoint has optimizer state for " +
                          std::to_string(states.size()) + " of " + std::to_string(whole.size()) +
                          " parameters",
                      "resume from a checkpoint that dptrain wrote");
  }
  optim::ParamState mine{states[0].step, {}};
  for (size_t k = 0; k < states[0].tensors.size(); ++k) {
    std::vector<torch::Tensor> per_param;
    for (const auto& s : states) per_param.push_back(s.tensors.at(k));
    const torch::Tensor flat = shard_.layout().flatten(per_param);
    mine.tensors.push_back(shard_.layout().own_shard(flat).to(shard_.master().options(),
                                                              /*non_blocking=*/false,
                                                              /*copy=*/true));
  }
  shard_optimizer_->state().clear();
  optim::write_param_state(*shard_optimizer_, shard_.master(), mine);
}

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  if (const auto* zero = dynamic_cast<const ZeroOptimizer*>(&optimizer)) {
    return optim::state_bytes(zero->shard_optimizer());
  }
  return optim::state_bytes(optimizer);
}

}  // namespace dptrain::parallel
