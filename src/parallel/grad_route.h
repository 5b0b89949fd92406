// Where a step's reduced gradients land, chosen once per backend (not flags over constructors):
//   - into every parameter's .grad, all-reduced (DistributedDataParallel; ZeRO stage 1 also takes
//     its shard's slice for the optimizer);
//   - into a ZeRO shard's slice alone, all-reduced (stage 2 over Gloo, which in LibTorch 1.13 has
//     no reduce-scatter: the numbers are then stage 0's bit for bit);
//   - into a ZeRO shard by one reduce-scatter of a padded bucket (stage 2 over NCCL).
// The GradReducer fills the flat gradients and launches the buckets; the route says which
// collective each bucket takes and where the means go once every bucket is in.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "parallel/flat_buffer.h"
#include "parallel/zero_shard.h"

namespace dptrain::parallel {

class GradRoute {
 public:
  virtual ~GradRoute() = default;

  // Whether the flat gradients are one bucket padded to every rank's shard (a reduce-scatter's
  // input) rather than buckets of the configured size.
  virtual bool one_padded_bucket() const { return false; }
  // Starts reducing `bucket` (the ranks' gradients, each already divided by the world size).
  virtual distributed::Communicator::Pending reduce(distributed::Communicator& comm,
                                                    const torch::Tensor& bucket, size_t index);
  // Once every bucket's reduction is complete: puts the means in `grads` (laid out over `params`)
  // where the optimizer reads them.
  virtual void deliver(const FlatBuffer& grads, std::vector<torch::Tensor>& params) = 0;
  // Whether the flat gradients are kept between steps; false: freed after deliver() (ZeRO stage 2
  // keeps no whole gradients).
  virtual bool keeps_flat_gradients() const { return true; }
};

// DistributedDataParallel's route: all-reduced into .grad.
std::unique_ptr<GradRoute> all_reduce_into_grad();
// The route for a ddp rank: all_reduce_into_grad() without ZeRO, else the one `shard`'s stage and
// transport call for (see ZeroShard::reduce_scatters()).
std::unique_ptr<GradRoute> choose_grad_route(ZeroShard* shard);

}  // namespace dptrain::parallel
