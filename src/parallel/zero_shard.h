// What one rank of a ZeRO job (parallel.zero_stage 1 or 2) holds of the model: every parameter
// lives in one flat buffer laid out by FlatLayout, and the rank keeps a master copy of its own
// shard whose .grad receives its shard of the reduced gradients; the optimizer steps that master
// alone, and the updated shards are all-gathered back into every rank's flat buffer.
// How the gradient shard arrives is chosen by transport, never by catching a failed collective:
// over Gloo (no reduce-scatter in LibTorch 1.13) the buckets are all-reduced exactly as under
// stage 0 and the rank keeps its slice, so its numbers are stage 0's bit for bit; over NCCL,
// stage 2 reduce-scatters one padded bucket straight into the master's .grad.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "parallel/flat_buffer.h"

namespace dptrain::parallel {

class ZeroShard {
 public:
  // Moves `params` into a flat buffer (each parameter's data becomes a view of it), in the order
  // of the gradient buckets that `bucket_bytes` makes (one bucket when reduce-scattering).
  ZeroShard(std::vector<torch::Tensor> params, distributed::Communicator& comm, int stage,
            int64_t bucket_bytes);

  int stage() const { return stage_; }
  // NCCL stage 2: the gradients come by one reduce-scatter into master().grad().
  bool reduce_scatters() const { return reduce_scatters_; }
  const FlatLayout& layout() const { return flat_.layout(); }
  // The parameters in the model's order (views of the flat buffer).
  const std::vector<torch::Tensor>& parameters() const { return params_; }
  // This rank's shard of the parameters, in their dtype, for the optimizer to step; its .grad is
  // the shard of the step's mean gradient (zero over the padding).
  const torch::Tensor& master() const { return master_; }

  // After the buckets are all-reduced: this rank's slice of the flat mean gradients `grads` (laid
  // out as layout(), unpadded or padded) into master().grad().
  void take_gradient_shard(const FlatBuffer& grads);
  // master() from the parameters as they are now (a checkpoint or early stopping may have set
  // them).
  void load_master();
  // Every rank's master() into every rank's parameters.
  void all_gather_parameters();
  // Every rank's `shard` (shard_numel() elements) end to end: a padded flat tensor.
  torch::Tensor gather(const torch::Tensor& shard, const std::string& what);
  // `local` summed over the ranks (a norm's squares, an inf/nan count).
  double sum(double local);

 private:
  distributed::Communicator& comm_;
  int stage_;
  bool reduce_scatters_;
  std::vector<torch::Tensor> params_;
  FlatBuffer flat_;  // every parameter, padded
  torch::Tensor master_;
};

}  // namespace dptrain::parallel
