#include "parallel/zero_shard.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace dptrain::parallel {
namespace {

std::vector<int64_t> numels(const std::vector<torch::Tensor>& params) {
  std::vector<int64_t> sizes;
  for (const auto& p : params) {
    if (!p.requires_grad()) {
      throw core::Error(core::ErrorCode::kNotSupported,
                        "parallel.zero_stage: the model has a frozen parameter",
                        "train every parameter, or use zero_stage 0");
    }
    sizes.push_back(p.numel());
  }
  return sizes;
}

bool uses_reduce_scatter(const distributed::Communicator& comm, int stage) {
  return stage >= 2 && comm.transport() == distributed::Transport::kNccl;
}

}  // namespace

std::vector<size_t> bucket_order(const std::vector<torch::Tensor>& params, int64_t bucket_bytes) {
  std::vector<int64_t> bytes;
  for (const auto& p : params) bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
  std::vector<size_t> order;
  for (const auto& bucket : assign_buckets(bytes, bucket_bytes)) {
    order.insert(order.end(), bucket.begin(), bucket.end());
  }
  return order;
}

ZeroShard::ZeroShard(std::vector<torch::Tensor> params, distributed::Communicator& comm, int stage,
                     int64_t bucket_bytes)
    : comm_(comm),
      stage_(stage),
      reduce_scatters_(uses_reduce_scatter(comm, stage)),
      params_(std::move(params)),
      layout_(numels(params_),
              bucket_order(params_,
                           reduce_scatters_ ? std::numeric_limits<int64_t>::max() : bucket_bytes),
              comm.world_size(), comm.rank()) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> values;
  for (const auto& p : params_) values.push_back(p.detach());
  flat_ = layout_.flatten(values);
  const std::vector<torch::Tensor> places = layout_.unflatten(flat_, params_);
  // The parameters become views of the flat buffer, so that the all-gather updates them in place.
  for (size_t i = 0; i < params_.size(); ++i) params_[i].set_data(places[i]);
  master_ = layout_.own_shard(flat_).clone().requires_grad_(true);
  master_.mutable_grad() = torch::zeros_like(master_.detach());
}

void ZeroShard::take_gradient_shard(const std::vector<GradReducer::Bucket>& buckets) {
  torch::NoGradGuard no_grad;
  const int64_t begin = layout_.shard_begin();
  const int64_t end = begin + layout_.shard_numel();
  int64_t bucket_begin = 0;
  for (const auto& bucket : buckets) {
    const int64_t lo = std::max(begin, bucket_begin);
    const int64_t hi = std::min(end, bucket_begin + bucket.numel);
    if (lo < hi) {
      master_.mutable_grad()
          .narrow(0, lo - begin, hi - lo)
          .copy_(bucket.flat.narrow(0, lo - bucket_begin, hi - lo));
    }
    bucket_begin += bucket.numel;
  }
}

void ZeroShard::load_master() {
  torch::NoGradGuard no_grad;
  master_.copy_(layout_.own_shard(flat_));
}

void ZeroShard::all_gather_parameters() {
  torch::NoGradGuard no_grad;
  comm_.all_gather(flat_, master_.detach(), "the all-gather of the updated parameter shards");
}

torch::Tensor ZeroShard::gather(const torch::Tensor& shard, const std::string& what) {
  torch::Tensor flat = torch::empty({layout_.padded_numel()}, shard.options());
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
