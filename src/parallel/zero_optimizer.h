// The optimizer a ZeRO rank steps: to the trainer and the checkpoints it is an optimizer over the
// model's parameters, like ddp's; inside, an optimizer of the configured kind over this rank's
// master shard alone holds 1/W of the state. A step steps the shard and all-gathers the updated
// shards into the parameters. Checkpoints hold the gathered state in ddp's per-parameter layout
// (as PyTorch's ZeroRedundancyOptimizer.consolidate_state_dict), so a checkpoint of any stage and
// world size resumes under any other, or on one device. Only the ddp backend sees this type: the
// trainer reaches the state through Backend::optimizer_state and load_optimizer_state.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "optim/param_state.h"
#include "parallel/backend.h"
#include "parallel/zero_shard.h"

namespace dptrain::parallel {

class ZeroOptimizer : public torch::optim::Optimizer {
 public:
  // `shard` must outlive the optimizer.
  ZeroOptimizer(OptimizerFactory make, ZeroShard& shard);

  // Steps the shard with this optimizer's learning rate, then all-gathers the parameters.
  torch::Tensor step(LossClosure closure = nullptr) override;
  // Collective: every rank sends its state shards, and rank 0 gets them joined into the whole
  // state over the parameters (one entry per parameter); the other ranks get an empty list.
  optim::StateList gather_state();
  // Takes a whole state in that layout (from any stage, world size or backend) and keeps this
  // rank's shard of it.
  void load_state(const optim::StateList& whole);

  const torch::optim::Optimizer& shard_optimizer() const { return *shard_optimizer_; }

 private:
  ZeroOptimizer(ZeroShard& shard, std::unique_ptr<torch::optim::Optimizer> shard_optimizer);

  ZeroShard& shard_;
  std::unique_ptr<torch::optim::Optimizer> shard_optimizer_;
};

// The bytes of optimizer state this rank holds (a ZeRO rank: its shard's).
int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

}  // namespace dptrain::parallel
