#include "train/step.h"

#include <algorithm>
#include <cmath>

#include "optim/optimizer.h"
#include "train/precision.h"

namespace dptrain::train {

namespace F = torch::nn::functional;

MicroBatchOutput accumulate_micro_batch(Session& s, const torch::Tensor& images,
                                        const torch::Tensor& labels, int64_t index, int64_t group) {
  parallel::Backend& backend = *s.backend;
  if (index == 0) s.optimizer->zero_grad();
  backend.set_gradient_sync(index == group - 1);
  MicroBatchOutput out;
  {
    const AutocastScope autocast(backend.devices(), s.autocast);
    out.logits = backend.forward(images);
    out.loss = F::cross_entropy(out.logits, labels);
  }
  // Divided only when accumulating, so that a step of one batch computes what it always did.
  const torch::Tensor share = group > 1 ? out.loss / static_cast<double>(group) : out.loss;
  s.scaler.scale_loss(share).backward();
  backend.finish_backward();
  return out;
}

bool take_optimizer_step(Session& s, const std::vector<torch::Tensor>& params, double lr) {
  if (s.grad_clip_norm > 0) {
    s.scaler.unscale(params);
    clip_gradient_norm(params, s.grad_clip_norm, *s.backend);
  }
  optim::set_learning_rate(*s.optimizer, lr);
  const bool stepped = s.scaler.step(*s.optimizer, params);
  s.scaler.update();
  return stepped;
}

double clip_gradient_norm(const std::vector<torch::Tensor>& params, double max_norm,
                          parallel::Backend& backend) {
  if (!backend.shards_optimizer()) return torch::nn::utils::clip_grad_norm_(params, max_norm);
  // A shard's norm says nothing alone: the squares are summed over the ranks (the padding is zero
  // and adds none), in float64 so that the order of the sums hardly matters.
  torch::NoGradGuard no_grad;
  double squares = 0;
  for (const auto& p : params) {
    if (p.grad().defined()) squares += p.grad().to(torch::kFloat64).square().sum().item<double>();
  }
  const double norm = std::sqrt(backend.sum_over_shards(squares));
  // clip_grad_norm_'s rule and epsilon.
  const double coefficient = max_norm / (norm + 1e-6);
  if (coefficient < 1) {
    for (const auto& p : params) {
      if (p.grad().defined()) p.grad().mul_(coefficient);
    }
  }
  return norm;
}

int64_t group_size(int64_t first, int64_t batches, int64_t k) {
  return std::max<int64_t>(1, std::min(k, batches - first));
}

int64_t optimizer_steps_per_epoch(int64_t batches, int64_t k) {
  return (batches + k - 1) / k;
}

}  // namespace dptrain::train
