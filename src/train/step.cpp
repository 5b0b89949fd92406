#include "train/step.h"

#include <algorithm>

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
  backend.synchronize_gradients();
  return out;
}

bool take_optimizer_step(Session& s, const std::vector<torch::Tensor>& params, double lr) {
  if (s.grad_clip_norm > 0) {
    s.scaler.unscale(params);
    torch::nn::utils::clip_grad_norm_(params, s.grad_clip_norm);
  }
  optim::set_learning_rate(*s.optimizer, lr);
  const bool stepped = s.scaler.step(*s.optimizer, params);
  s.scaler.update();
  return stepped;
}

int64_t group_size(int64_t first, int64_t batches, int64_t k) {
  return std::max<int64_t>(1, std::min(k, batches - first));
}

int64_t optimizer_steps_per_epoch(int64_t batches, int64_t k) {
  return (batches + k - 1) / k;
}

}  // namespace dptrain::train
