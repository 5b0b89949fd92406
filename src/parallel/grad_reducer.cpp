#include "parallel/grad_reducer.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>

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
                         int64_t bucket_bytes, std::unique_ptr<GradRoute> route,
                         const CompressionSpec& compression)
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
  compress(compression);
  views_ = route_->keeps_flat_gradients();
  // After accumulation rather than on the incoming gradient: .grad then holds this backward's sum,
  // in the slot itself where it is a view.
  for (size_t i = 0; i < params_.size(); ++i) {
    // Before accumulation: what must be refused is refused before .grad (a bucket that may be in
    // an all-reduce) is touched.
    checks_.push_back(
        params_[i].register_hook([this, i](const torch::Tensor&) { check_backward(i); }));
    accumulators_.push_back(torch::autograd::impl::grad_accumulator(params_[i]));
    hooks_.push_back(accumulators_.back()->add_post_hook(
        std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, i](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list& /*inputs*/) {
              on_accumulated(i);
              return outputs;
            })));
  }
  ready_.assign(params_.size(), false);
}

void GradReducer::compress(const CompressionSpec& spec) {
  if (spec.kind == config::GradCompression::kNone) return;
  if (route_->one_padded_bucket()) {
    throw core::Error(core::ErrorCode::kNotSupported,
                      "parallel.grad_compression: ZeRO stage 2's gradients are reduce-scattered "
                      "into shards over NCCL, which compression does not serve",
                      "use parallel.zero_stage 1 or 0 with compression");
  }
  std::vector<BucketShape> shapes;
  for (const auto& bucket : buckets_) {
    BucketShape shape;
    shape.numel = bucket.numel;
    for (const size_t i : bucket.params) {
      shape.members.push_back({grads_.layout().offset(i) - bucket.begin, params_[i].sizes().vec()});
    }
    shapes.push_back(std::move(shape));
  }
  compression_ = make_compression(spec, shapes, params_.front().options().requires_grad(false),
                                  comm_.transport());
}

GradReducer::~GradReducer() {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    params_[i].remove_hook(checks_[i]);
    accumulators_[i]->del_post_hook(hooks_[i]);
  }
}

namespace {

bool is_slot(const torch::Tensor& grad, const torch::Tensor& slot) {
  return grad.defined() && grad.data_ptr() == slot.data_ptr() && grad.numel() == slot.numel();
}

// `slot`'s memory shaped as `param`, contiguous. Made with set_() rather than view(): autograd
// refuses to detach_() a view in place, which LibTorch's Optimizer::zero_grad does to every .grad.
torch::Tensor alias_of(const torch::Tensor& slot, const torch::Tensor& param) {
  std::vector<int64_t> strides(static_cast<size_t>(param.dim()));
  int64_t stride = 1;
  for (int64_t d = param.dim() - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= param.size(d);
  }
  return torch::empty({0}, slot.options())
      .set_(slot.storage(), slot.storage_offset(), param.sizes(), strides);
}

// Copies `grad` (dense or sparse, shaped as its parameter) into `slot`; zeros where undefined.
void copy_into_slot(const torch::Tensor& grad, const torch::Tensor& slot) {
  if (!grad.defined()) {
    slot.zero_();
  } else if (grad.is_sparse()) {
    slot.copy_(grad.to_dense().reshape({-1}));
  } else {
    slot.copy_(grad.reshape({-1}));
  }
}

}  // namespace

void GradReducer::adopt_gradient(size_t param, bool keep, bool slot_is_zero) {
  torch::Tensor& grad = params_[param].mutable_grad();
  const torch::Tensor slot = grads_.slot(param);
  if (is_slot(grad, slot)) return;
  if (keep) {
    copy_into_slot(grad, slot);
  } else if (!slot_is_zero) {
    slot.zero_();
  }
  grad = alias_of(slot, params_[param]);
}

void GradReducer::prepare_for_backward(bool include_accumulated) {
  if (params_.empty()) return;
  torch::NoGradGuard no_grad;
  grads_.allocate_zeros();
  if (views_) {
    if (!include_accumulated) grads_.flat().zero_();
    for (size_t i = 0; i < params_.size(); ++i) {
      adopt_gradient(i, include_accumulated, /*slot_is_zero=*/!include_accumulated);
    }
  } else if (!include_accumulated) {
    // Autograd would add this backward's gradient to whatever .grad holds.
    for (auto& p : params_) p.mutable_grad().reset();
  }
  include_accumulated_ = include_accumulated;
  ready_.assign(params_.size(), false);
  missing_.clear();
  for (const auto& b : buckets_) missing_.push_back(b.params.size());
  next_launch_ = 0;
  // What a step that ended in an error left in flight writes into these buckets: wait for it.
  for (auto& reduction : in_flight_) reduction->abandon();
  in_flight_.clear();
  armed_ = true;
}

void GradReducer::check_backward(size_t param) const {
  if (!armed_) return;  // a backward outside training steps is not reduced
  if (torch::GradMode::is_enabled()) {
    throw core::Error(core::ErrorCode::kNotSupported,
                      "ddp: a backward with create_graph (autograd then makes .grad anew, out of "
                      "the gradient buckets)",
                      "compute higher derivatives without ddp");
  }
  if (ready_[param]) {
    // Its bucket may be in an all-reduce already, whose memory .grad is.
    throw core::Error(
        core::ErrorCode::kNotSupported,
        "ddp: a second backward before finish() reached parameter " + std::to_string(param),
        "one backward per prepared forward; accumulate micro-batches with "
        "train.accumulate_grad_batches");
  }
}

void GradReducer::on_accumulated(size_t param) {
  if (!armed_) return;
  ready_[param] = true;
  torch::NoGradGuard no_grad;
  // Autograd has added this backward's gradient to .grad (the slot itself, unless something made
  // .grad anew since prepare_for_backward()).
  if (views_) {
    adopt_gradient(param, /*keep=*/true, /*slot_is_zero=*/false);
  } else {
    copy_into_slot(params_[param].grad(), grads_.slot(param));
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
  if (compression_) {
    in_flight_.push_back(compression_->start(comm_, bucket, b, reduced_steps_));
  } else {
    in_flight_.push_back(std::make_unique<PendingReduction>(route_->reduce(comm_, bucket, b)));
  }
}

void GradReducer::finish() {
  if (!armed_) return;
  armed_ = false;
  torch::NoGradGuard no_grad;
  for (size_t b = next_launch_; b < buckets_.size(); ++b) {
    for (const size_t p : buckets_[b].params) {
      if (ready_[p]) continue;
      // No gradient from this backward: what earlier micro-batches left, or zero (a view already
      // holds that since prepare_for_backward()).
      const torch::Tensor& accumulated = params_[p].grad();
      if (views_) {
        adopt_gradient(p, /*keep=*/include_accumulated_, /*slot_is_zero=*/false);
      } else if (include_accumulated_ && accumulated.defined()) {
        copy_into_slot(accumulated, grads_.slot(p));
      } else {
        grads_.slot(p).zero_();
      }
    }
    missing_[b] = 0;
  }
  launch_ready_buckets();
  core::Stopwatch waiting;
  // In index order, as launched: PowerSGD's second collectives then follow the same order on every
  // rank.
  for (auto& reduction : in_flight_) reduction->finish();
  wait_seconds_ += waiting.seconds();
  in_flight_.clear();
  ++reduced_steps_;
  route_->deliver(grads_, params_);
  if (!route_->keeps_flat_gradients()) grads_.release();
}

}  // namespace dptrain::parallel
