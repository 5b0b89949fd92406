#include "parallel/zero_shard.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "parallel/grad_reducer.h"

namespace dptrain::parallel {
namespace {

const std::vector<torch::Tensor>& all_trained(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params) {
    if (!p.requires_grad()) {
      throw core::Error(core::ErrorCode::kNotSupported,
                        "parallel.zero_stage: the model has a frozen parameter",
                        "train every parameter, or use zero_stage 0");
    }
  }
  return params;
}

// By transport, never by catching a failed collective: Gloo in LibTorch 1.13 has no
// reduce-scatter.
bool uses_reduce_scatter(const distributed::Communicator& comm, int stage) {
  return stage >= 2 && comm.transport() == distributed::Transport::kNccl;
}

}  // namespace

ZeroShard::ZeroShard(std::vector<torch::Tensor> params, distributed::Communicator& comm, int stage,
                     int64_t bucket_bytes)
    : comm_(comm),
      stage_(stage),
      reduce_scatters_(uses_reduce_scatter(comm, stage)),
      params_(std::move(params)) {
  const std::vector<torch::Tensor>& trained = all_trained(params_);
  TORCH_CHECK(!trained.empty(), "parallel.zero_stage: a model without parameters");
  const FlatLayout layout(
      numels_of(trained),
      bucket_order(params_, reduce_scatters_ ? std::numeric_limits<int64_t>::max() : bucket_bytes),
      comm.world_size(), comm.rank(), trained.front().element_size());
  // The parameters become views of the flat buffer, so that the all-gather updates them in place.
  flat_ = FlatBuffer::adopt(params_, layout, "parallel.zero_stage");
  torch::NoGradGuard no_grad;
  master_ = flat_.own_shard().clone().requires_grad_(true);
  master_.mutable_grad() = torch::zeros_like(master_.detach());
}

void ZeroShard::take_gradient_shard(const FlatBuffer& grads) {
  torch::NoGradGuard no_grad;
  // The last shards may reach into the padding, which an unpadded `grads` lacks: it stays zero.
  const int64_t begin = layout().shard_begin();
  const int64_t n = std::min(layout().shard_numel(), grads.layout().numel() - begin);
  if (n > 0) master_.mutable_grad().narrow(0, 0, n).copy_(grads.range(begin, n));
}

void ZeroShard::load_master() {
  torch::NoGradGuard no_grad;
  master_.copy_(flat_.own_shard());
}

void ZeroShard::all_gather_parameters() {
  torch::NoGradGuard no_grad;
  comm_.all_gather(flat_.flat(), master_.detach(),
                   "the all-gather of the updated parameter shards");
}
torch::Tensor ZeroShard::gather(const torch::Tensor& shard, const std::string& what) {
  torch::Tensor flat = torch::empty({layout().padded_numel()}, shard.options());
  comm_.all_gather(flat, shard.contiguous(), what);
  return flat;
}

double ZeroShard::sum(double local) {
  torch::Tensor t =
      torch::tensor({local}, torch::TensorOptions().dtype(torch::kFloat64)).to(master_.device());
  comm_.all_reduce(t, "the all-reduce of the gradient shards' norm and inf/nan check");
  return t.cpu().item<double>();
}

}  // namespace dptrain::parallel
