#include "model/sync_batch_norm.h"

#include <algorithm>

namespace dptrain::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// [C] -> [1, C, 1, 1], to broadcast over N, H and W.
torch::Tensor per_channel(const torch::Tensor& t) {
  return t.view({1, -1, 1, 1});
}

const std::vector<int64_t> kReduceDims = {0, 2, 3};

class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               BatchNorm2dImpl* bn, StatisticsSum* over) {
    const torch::Tensor x32 = x.to(BatchNorm2dImpl::compute_dtype(x));
    const int64_t channels = x.size(1);
    // Each rank's count, sum and sum of squares, from its own mean and variance (two passes),
    // accumulated and summed over the ranks in fp64, as LibTorch's CPU kernels accumulate: the
    // gradient terms below cancel heavily, and float sums would leave percent-level noise.
    const double count = static_cast<double>(x.numel() / channels);
    // An empty shard adds nothing (and divides by nothing).
    const torch::Tensor mean64 = x32.sum(kReduceDims, false, torch::kDouble) / std::max(count, 1.0);
    const torch::Tensor centred = x32 - per_channel(mean64.to(x32.scalar_type()));
    const torch::Tensor var64 =
        centred.square().sum(kReduceDims, false, torch::kDouble) / std::max(count, 1.0);
    const torch::Tensor stats = torch::cat({mean64 * count, (var64 + mean64.square()) * count,
                                            torch::full({1}, count, mean64.options())});
    over->sum(stats, "the all-reduce of SyncBatchNorm's statistics");
    const double total = stats[2 * channels].item<double>();
    const torch::Tensor global_mean = stats.narrow(0, 0, channels) / total;
    const torch::Tensor global_var =
        (stats.narrow(0, channels, channels) / total - global_mean.square()).clamp_min(0);
    {
      torch::NoGradGuard no_grad;
      const double m = BatchNorm2dImpl::kMomentum;
      const double unbiased = total > 1 ? total / (total - 1) : 1.0;
      bn->running_mean.mul_(1 - m).add_(global_mean.to(bn->running_mean.scalar_type()), m);
      bn->running_var.mul_(1 - m).add_((global_var * unbiased).to(bn->running_var.scalar_type()),
                                       m);
    }
    const torch::Tensor invstd = (global_var + BatchNorm2dImpl::kEps).rsqrt().to(x32.scalar_type());
    const torch::Tensor xhat =
        (x32 - per_channel(global_mean.to(x32.scalar_type()))) * per_channel(invstd);
    ctx->save_for_backward({xhat, invstd, weight});
    ctx->saved_data["total"] = total;
    // A raw pointer: the BatchNorm's shared_ptr keeps it alive for as long as the backend that set
    // it, which outlives every step's backward.
    ctx->saved_data["over"] = reinterpret_cast<int64_t>(over);
    ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
    return (xhat * per_channel(weight) + per_channel(bias)).to(x.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& xhat = saved[0];
    const torch::Tensor& invstd = saved[1];
    const torch::Tensor& weight = saved[2];
    const double total = ctx->saved_data["total"].toDouble();
    auto* over = reinterpret_cast<StatisticsSum*>(ctx->saved_data["over"].toInt());
    const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    const torch::Tensor dy = grads[0].to(xhat.scalar_type());
    const int64_t channels = xhat.size(1);
    // This rank's terms: the weight's and bias's gradients as they are, and both summed over the
    // ranks for the input's gradient.
    const torch::Tensor sum_dy = dy.sum(kReduceDims, false, torch::kDouble);
    const torch::Tensor sum_dy_xhat = (dy * xhat).sum(kReduceDims, false, torch::kDouble);
    const torch::Tensor sums = torch::cat({sum_dy, sum_dy_xhat});
    over->sum(sums, "the all-reduce of SyncBatchNorm's gradient terms");
    const auto as_x = [&](const torch::Tensor& t) { return per_channel(t.to(dy.scalar_type())); };
    const torch::Tensor mean_dy = as_x(sums.narrow(0, 0, channels) / total);
    const torch::Tensor mean_dy_xhat = as_x(sums.narrow(0, channels, channels) / total);
    const torch::Tensor dx = per_channel(weight * invstd) * (dy - mean_dy - xhat * mean_dy_xhat);
    const auto param_dtype = weight.scalar_type();
    return {dx.to(dtype), sum_dy_xhat.to(param_dtype), sum_dy.to(param_dtype), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

torch::Tensor sync_batch_norm(const torch::Tensor& x, BatchNorm2dImpl& bn, StatisticsSum& over) {
  return SyncBatchNormFunction::apply(x, bn.weight, bn.bias, &bn, &over);
}

}  // namespace dptrain::model
