// The optimizer a ZeRO rank steps: to the trainer and the checkpoints it is an optimizer over the
// model's parameters, like ddp's; inside, an optimizer of the configured kind over this rank's
// master shard alone holds 1/W of the state. A step steps the shard and all-gathers the updated
// shards into the parameters. Checkpoints hold the consolidated state in ddp's per-parameter
// layout (as PyTorch's ZeroRedundancyOptimizer.consolidate_state_dict), so a checkpoint of any
// stage and world size resumes under any other, or on one device.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "optim/optimizer_state.h"
#include "parallel/backend.h"
#include "parallel/zero_shard.h"

namespace dptrain::parallel {

class ZeroOptimizer : public torch::optim::Optimizer {
 public:
  // `shard` must outlive the optimizer.
  ZeroOptimizer(OptimizerFactory make, ZeroShard& shard);

  // Steps the shard with this optimizer's learning rate, then all-gathers the parameters.
  torch::Tensor step(LossClosure closure = nullptr) override;
  // Collective: every rank sends its state shards; rank 0 keeps them joined.
  void consolidate();
  // Rank 0, after consolidate(): the whole state, held by an optimizer over the parameters (with
  // this optimizer's learning rate), for a checkpoint to save. It is handed over, not kept.
  std::unique_ptr<torch::optim::Optimizer> take_consolidated();
  // Takes a whole state in that layout (from any stage, world size or backend; one entry per
  // parameter, see optim/optimizer_state.h) and keeps this rank's shard of it.
  void load_state(const optim::StateList& whole);

  const torch::optim::Optimizer& shard_optimizer() const { return *shard_optimizer_; }

 private:
  ZeroOptimizer(OptimizerFactory make, ZeroShard& shard,
                std::unique_ptr<torch::optim::Optimizer> shard_optimizer);

  OptimizerFactory make_;
  ZeroShard& shard_;
  std::unique_ptr<torch::optim::Optimizer> shard_optimizer_;
  // Rank 0 between consolidate() and take_consolidated(): the whole state over the parameters.
  std::unique_ptr<torch::optim::Optimizer> consolidated_;
};

// The bytes of optimizer state this rank holds (a ZeRO rank: its shard's).
int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

}  // namespace dptrain::parallel
