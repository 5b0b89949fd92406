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

namespace {

std::vector<int64_t> bytes_of(const std::vector<torch::Tensor>& params) {
  std::vector<int64_t> bytes;
  for (const auto& p : params) bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
  return bytes;
}

// The buckets' parameter indices end to end: the flat gradients' order.
std::vector<size_t> end_to_end(const std::vector<std::vector<size_t>>& buckets) {
  std::vector<size_t> order;
  for (const auto& bucket : buckets) order.insert(order.end(), bucket.begin(), bucket.end());
  return order;
}

}  // namespace

std::vector<size_t> bucket_order(const std::vector<torch::Tensor>& params, int64_t bucket_bytes) {
  return end_to_end(assign_buckets(bytes_of(params), bucket_bytes));
}

GradReducer::GradReducer(std::vector<torch::Tensor> params, distributed::Communicator& comm,
                         int64_t bucket_bytes, std::unique_ptr<GradRoute> route)
    : comm_(comm), route_(std::move(route)) {
  if (route_->one_padded_bucket()) bucket_bytes = std::numeric_limits<int64_t>::max();
  for (auto& p : params) {
    if (p.requires_grad()) params_.push_back(p);
  }
  if (params_.empty()) return;  // a frozen model: nothing to reduce
  for (const auto& p : params_) {
    if (p.scalar_type() != params_.front().scalar_type() ||
        p.device() != params_.front().device()) {
      throw core::Error(core::ErrorCode::kNotSupported,
                        "ddp: parameters of several dtypes or devices in one model",
                        "keep the model's parameters in one dtype on one device");
    }
  }
  const std::vector<std::vector<size_t>> groups = assign_buckets(bytes_of(params_), bucket_bytes);
  // Padded to every rank's shard only for a reduce-scatter: else no byte more than .grad's.
  const int world = route_->one_padded_bucket() ? comm_.world_size() : 1;
  grads_ = FlatBuffer(FlatLayout(numels_of(params_), end_to_end(groups), world, /*rank=*/0,
                                 params_.front().element_size()),
                      params_.front().options());
  bucket_of_.resize(params_.size());
  for (const auto& members : groups) {
    Bucket bucket;
    bucket.params = members;
    bucket.begin = grads_.layout().offset(members.front());
    // To the end of its last member, the alignment gaps between them included.
    bucket.numel =
        grads_.layout().offset(members.back()) + params_[members.back()].numel() - bucket.begin;
    for (size_t i : members) bucket_of_[i] = buckets_.size();
    buckets_.push_back(std::move(bucket));
  }
  if (route_->one_padded_bucket()) buckets_.front().numel = grads_.layout().padded_numel();
  for (size_t i = 0; i < params_.size(); ++i) {
    hooks_.push_back(
        params_[i].register_hook([this, i](const torch::Tensor& grad) { on_gradient(i, grad); }));
  }
  ready_.assign(params_.size(), false);
}

GradReducer::~GradReducer() {
  for (size_t i = 0; i < hooks_.size(); ++i) params_[i].remove_hook(hooks_[i]);
}

void GradReducer::prepare_for_backward(bool include_accumulated) {
  if (params_.empty()) return;
  grads_.allocate_zeros();
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
  torch::Tensor slot = grads_.slot(param);
  const torch::Tensor& accumulated = params_[param].grad();
  if (include_accumulated_ && accumulated.defined()) {
    // In AccumulateGrad's order, .grad + new, as single-device accumulation sums them.
    torch::add_out(slot, accumulated.reshape({-1}), grad.reshape({-1}));
  } else {
    slot.copy_(grad.reshape({-1}));
  }
  if (--missing_[bucket_of_[param]] == 0) launch_ready_buckets();
}

void GradReducer::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && missing_[next_launch_] == 0) launch(next_launch_++);
}

void GradReducer::launch(size_t b) {
  const torch::Tensor bucket = grads_.range(buckets_[b].begin, buckets_[b].numel);
  // Averaging before the sum, as DDP does, keeps low-precision gradients from overflowing.
  bucket.div_(comm_.world_size());
  pending_.push_back(route_->reduce(comm_, bucket, b));
}

void GradReducer::finish() {
  if (!armed_) return;
  armed_ = false;
  torch::NoGradGuard no_grad;
  for (size_t b = next_launch_; b < buckets_.size(); ++b) {
    for (const size_t p : buckets_[b].params) {
      if (ready_[p]) continue;
      // No gradient from this backward: what earlier micro-batches left, or zero.
      const torch::Tensor& accumulated = params_[p].grad();
      if (include_accumulated_ && accumulated.defined()) {
        grads_.slot(p).copy_(accumulated.reshape({-1}));
      } else {
        grads_.slot(p).zero_();
      }
    }
    missing_[b] = 0;
  }
  launch_ready_buckets();
  core::Stopwatch waiting;
  for (auto& pending : pending_) pending.wait();
  wait_seconds_ += waiting.seconds();
  pending_.clear();
  route_->deliver(grads_, params_);
  if (!route_->keeps_flat_gradients()) grads_.release();
}

}  // namespace dptrain::parallel
