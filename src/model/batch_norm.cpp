#include "model/batch_norm.h"

#include "model/sync_batch_norm.h"

namespace dptrain::model {

BatchNorm2dImpl::BatchNorm2dImpl(int64_t channels) : channels_(channels) {
  reset();
}

void BatchNorm2dImpl::reset() {
  weight = register_parameter("weight", torch::ones({channels_}));
  bias = register_parameter("bias", torch::zeros({channels_}));
  running_mean = register_buffer("running_mean", torch::zeros({channels_}));
  running_var = register_buffer("running_var", torch::ones({channels_}));
  num_batches_tracked =
      register_buffer("num_batches_tracked", torch::zeros({}, torch::TensorOptions(torch::kLong)));
}

torch::ScalarType BatchNorm2dImpl::compute_dtype(const torch::Tensor& x) {
  const bool reduced = x.scalar_type() == torch::kHalf || x.scalar_type() == torch::kBFloat16;
  return reduced ? torch::kFloat : x.scalar_type();
}

torch::Tensor BatchNorm2dImpl::forward(const torch::Tensor& x) {
  if (is_training()) {
    torch::NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  if (is_training() && sync_) return sync_batch_norm(x, *this, *sync_);
  // The output in the input's dtype, as PyTorch's.
  const torch::Tensor y =
      torch::batch_norm(x.to(compute_dtype(x)), weight, bias, running_mean, running_var,
                        is_training(), kMomentum, kEps, /*cudnn_enabled=*/true);
  return y.to(x.scalar_type());
}

}  // namespace dptrain::model
