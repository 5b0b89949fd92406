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
  // clip_grad_norm_'s rule and epsilon, with the squares summed in float64 on every backend: a
  // shard's norm says nothing alone, so ZeRO sums the ranks' (the padding is zero and adds none),
  // and an unsharded run summing the same squares in float64 clips by the same coefficient but
  // for the order of float64 sums. LibTorch's clip_grad_norm_ sums in float32, whose rounding
  // hangs on the CPU's vector code: ZeRO's Adam steps drifted 2e-4 from stage 0's within 18
  // steps with ATen's AVX-512 kernels. One sum on the device, one read: no sync per tensor.
  torch::NoGradGuard no_grad;
  torch::Tensor squares;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    const torch::Tensor s = p.grad().to(torch::kFloat64).square().sum();
    squares = squares.defined() ? squares + s : s;
  }
  const double local = squares.defined() ? squares.item<double>() : 0.0;
  const double norm =
      std::sqrt(backend.shards_optimizer() ? backend.sum_over_shards(local) : local);
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
