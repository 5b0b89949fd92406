// BatchNorm2d with PyTorch's parameters, buffers and names (weight, bias, running_mean,
// running_var, num_batches_tracked), momentum 0.1 and eps 1e-5, computed in fp32 at least, whatever
// autocast made of the input (BatchNorm stays in fp32 under autocast, as PyTorch's does). One
// addition: given a StatisticsSum, training forwards normalise with the statistics of the global
// batch, summed over the ranks, and backward sums its two per-channel terms too
// (torch.nn.SyncBatchNorm).
#pragma once

#include <torch/torch.h>

#include <memory>

namespace dptrain::model {

// Sums per-channel figures over the ranks that share a global batch, in place. The backend that
// owns the ranks provides it; model/ knows nothing of how.
class StatisticsSum {
 public:
  virtual ~StatisticsSum() = default;
  virtual void sum(const torch::Tensor& values, const char* what) = 0;
};

class BatchNorm2dImpl : public torch::nn::Cloneable<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(int64_t channels);

  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);
  // Statistics over every rank's batch from now on (nullptr: this rank's own).
  void sync_statistics(std::shared_ptr<StatisticsSum> over) { sync_ = std::move(over); }

  // fp32 for fp16 and bf16 inputs, else the input's own dtype.
  static torch::ScalarType compute_dtype(const torch::Tensor& x);

  static constexpr double kMomentum = 0.1;
  static constexpr double kEps = 1e-5;

  torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  int64_t channels_;
  std::shared_ptr<StatisticsSum> sync_;
};
TORCH_MODULE(BatchNorm2d);

}  // namespace dptrain::model
