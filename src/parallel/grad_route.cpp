#include "parallel/grad_route.h"

namespace dptrain::parallel {
namespace {

// Writes the means into each parameter's .grad (made at the first step, then reused); nothing to
// write where .grad is the mean's own memory (GradReducer::gradients_are_views()).
void write_into_grad(const FlatBuffer& grads, std::vector<torch::Tensor>& params) {
  const std::vector<torch::Tensor> means = grads.views(params);
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].grad().defined() && params[i].grad().data_ptr() == means[i].data_ptr()) continue;
    if (params[i].grad().defined()) {
      params[i].mutable_grad().copy_(means[i]);
    } else {
      params[i].mutable_grad() = means[i].clone();
    }
  }
}

class IntoGrad : public GradRoute {
 public:
  void deliver(const FlatBuffer& grads, std::vector<torch::Tensor>& params) override {
    write_into_grad(grads, params);
  }
};

// ZeRO over all-reduce: every rank has every mean, and keeps its shard's slice for the optimizer.
// Stage 1 keeps whole gradients as stage 0 does; stage 2 keeps the slice alone.
class IntoShardSlice : public GradRoute {
 public:
  explicit IntoShardSlice(ZeroShard& shard) : shard_(shard) {}

  void deliver(const FlatBuffer& grads, std::vector<torch::Tensor>& params) override {
    shard_.take_gradient_shard(grads);
    if (shard_.stage() < 2) {
      write_into_grad(grads, params);
      return;
    }
    for (auto& p : params) p.mutable_grad().reset();
  }
  bool keeps_flat_gradients() const override { return shard_.stage() < 2; }

 private:
  ZeroShard& shard_;
};

// ZeRO stage 2 over NCCL: one reduce-scatter leaves this rank's slice in the master's .grad.
class ReduceScatterIntoShard : public GradRoute {
 public:
  explicit ReduceScatterIntoShard(ZeroShard& shard) : shard_(shard) {}

  bool one_padded_bucket() const override { return true; }
  distributed::Communicator::Pending reduce(distributed::Communicator& comm,
                                            const torch::Tensor& bucket,
                                            size_t /*index*/) override {
    return comm.reduce_scatter_async(shard_.master().grad(), bucket,
                                     "the reduce-scatter of gradients");
  }
  void deliver(const FlatBuffer& /*grads*/, std::vector<torch::Tensor>& params) override {
    for (auto& p : params) p.mutable_grad().reset();
  }
  bool keeps_flat_gradients() const override { return false; }

 private:
  ZeroShard& shard_;
};

}  // namespace

distributed::Communicator::Pending GradRoute::reduce(distributed::Communicator& comm,
                                                     const torch::Tensor& bucket, size_t index) {
  return comm.all_reduce_async(bucket,
                               "the all-reduce of gradient bucket " + std::to_string(index));
}

std::unique_ptr<GradRoute> all_reduce_into_grad() {
  return std::make_unique<IntoGrad>();
}

std::unique_ptr<GradRoute> choose_grad_route(ZeroShard* shard) {
  if (shard == nullptr) return all_reduce_into_grad();
  if (shard->reduce_scatters()) return std::make_unique<ReduceScatterIntoShard>(*shard);
  return std::make_unique<IntoShardSlice>(*shard);
}

}  // namespace dptrain::parallel
