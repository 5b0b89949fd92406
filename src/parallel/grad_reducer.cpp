#include "parallel/grad_reducer.h"

#include <limits>

#include "core/error.h"
#include "core/timer.h"

namespace dptrain::parallel {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& param_bytes,
                                                int64_t bucket_bytes) {
  std::vector<std::vector<size_t>> buckets;
  int64_t filled = 0;
  for (size_t i = param_bytes.size(); i-- > 0;) {
    if (buckets.empty() || (filled > 0 && filled + param_bytes[i] > bucket_bytes)) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(i);
    filled += param_bytes[i];
  }
  return buckets;
}

GradReducer::GradReducer(std::vector<torch::Tensor> params, distributed::Communicator& comm,
                         int64_t bucket_bytes, torch::Tensor scatter_into)
    : comm_(comm), scatter_into_(std::move(scatter_into)) {
  if (scatter_into_.defined()) bucket_bytes = std::numeric_limits<int64_t>::max();
  for (auto& p : params) {
    if (p.requires_grad()) params_.push_back(p);
  }
  std::vector<int64_t> sizes;
  for (const auto& p : params_) {
    if (p.scalar_type() != params_.front().scalar_type() ||
        p.device() != params_.front().device()) {
      throw core::Error(core::ErrorCode::kNotSupported,
                        "ddp: parameters of several dtypes or devices in one model",
                        "keep the model's parameters in one dtype on one device");
    }
    sizes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
  }
  bucket_of_.resize(params_.size());
  slot_of_.resize(params_.size());
  for (const auto& members : assign_buckets(sizes, bucket_bytes)) {
    Bucket bucket;
    int64_t numel = 0;
    for (size_t i : members) {
      bucket_of_[i] = buckets_.size();
      slot_of_[i] = bucket.params.size();
      bucket.params.push_back(i);
      bucket.offsets.push_back(numel);
      numel += params_[i].numel();
    }
    if (scatter_into_.defined()) numel = scatter_into_.numel() * comm_.world_size();
    bucket.numel = numel;
    bucket.flat = torch::zeros({numel}, params_.front().options().requires_grad(false));
    buckets_.push_back(std::move(bucket));
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    hooks_.push_back(
        params_[i].register_hook([this, i](const torch::Tensor& grad) { on_gradient(i, grad); }));
  }
  ready_.assign(params_.size(), false);
}

GradReducer::~GradReducer() {
  for (size_t i = 0; i < hooks_.size(); ++i) params_[i].remove_hook(hooks_[i]);
}

void GradReducer::release_buckets() {
  for (auto& bucket : buckets_) bucket.flat = torch::Tensor();
}

void GradReducer::prepare_for_backward(bool include_accumulated) {
  for (auto& bucket : buckets_) {
    // Zeros: the padding of a reduce-scattered bucket is summed and must stay zero.
    if (!bucket.flat.defined()) {
      bucket.flat = torch::zeros({bucket.numel}, params_.front().options().requires_grad(false));
    }
  }
  include_accumulated_ = include_accumulated;
  ready_.assign(params_.size(), false);
  missing_.clear();
  for (const auto& b : buckets_) missing_.push_back(b.params.size());
  next_launch_ = 0;
  pending_.clear();
  armed_ = true;
}

void GradReducer::on_gradient(size_t param, const torch::Tensor& grad) {
  if (!armed_ || ready_[param]) return;  // a backward outside training steps is not reduced
  ready_[param] = true;
  torch::Tensor slot = slot_view(param);
  const torch::Tensor& accumulated = params_[param].grad();
  if (include_accumulated_ && accumulated.defined()) {
    // In AccumulateGrad's order, .grad + new, as single-device accumulation sums them.
    torch::add_out(slot, accumulated.reshape({-1}), grad.reshape({-1}));
  } else {
    slot.copy_(grad.reshape({-1}));
  }
  if (--missing_[bucket_of_[param]] == 0) launch_ready_buckets();
}

torch::Tensor GradReducer::slot_view(size_t param) {
  Bucket& bucket = buckets_[bucket_of_[param]];
  return bucket.flat.narrow(0, bucket.offsets[slot_of_[param]], params_[param].numel());
}

void GradReducer::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && missing_[next_launch_] == 0) launch(next_launch_++);
}

void GradReducer::launch(size_t b) {
  Bucket& bucket = buckets_[b];
  // Averaging before the sum, as DDP does, keeps low-precision gradients from overflowing.
  bucket.flat.div_(comm_.world_size());
  if (scatter_into_.defined()) {
    pending_.push_back(
        comm_.reduce_scatter_async(scatter_into_, bucket.flat, "the reduce-scatter of gradients"));
    return;
  }
  pending_.push_back(comm_.all_reduce_async(
      bucket.flat, "the all-reduce of gradient bucket " + std::to_string(b)));
}

void GradReducer::finish(bool write_gradients) {
  if (!armed_) return;
  armed_ = false;
  torch::NoGradGuard no_grad;
  for (size_t b = next_launch_; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    for (const size_t p : bucket.params) {
      if (ready_[p]) continue;
      // No gradient from this backward: what earlier micro-batches left, or zero.
      const torch::Tensor& accumulated = params_[p].grad();
      if (include_accumulated_ && accumulated.defined()) {
        slot_view(p).copy_(accumulated.reshape({-1}));
      } else {
        slot_view(p).zero_();
      }
    }
    missing_[b] = 0;
  }
  launch_ready_buckets();
  core::Stopwatch waiting;
  for (auto& pending : pending_) pending.wait();
  wait_seconds_ += waiting.seconds();
  pending_.clear();
  if (!write_gradients) return;
  for (const auto& bucket : buckets_) {
    for (size_t slot = 0; slot < bucket.params.size(); ++slot) {
      torch::Tensor& param = params_[bucket.params[slot]];
      const torch::Tensor mean =
          bucket.flat.narrow(0, bucket.offsets[slot], param.numel()).view_as(param);
      if (param.grad().defined()) {
        param.mutable_grad().copy_(mean);
      } else {
        param.mutable_grad() = mean.clone();
      }
    }
  }
}

}  // namespace dptrain::parallel
