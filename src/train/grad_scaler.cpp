#include "train/grad_scaler.h"

#include <cmath>

namespace dptrain::train {

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale) {}

torch::Tensor GradScaler::scale_loss(const torch::Tensor& loss) const {
  return options_.enabled ? loss * scale_ : loss;
}

void GradScaler::unscale(const std::vector<torch::Tensor>& params) {
  if (!options_.enabled || unscaled_) return;
  unscaled_ = true;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  torch::_foreach_mul_(grads, 1.0 / scale_);
  // The float64 sum of every element is finite exactly when each element is (float32 values
  // cannot overflow it, and inf - inf gives nan): one value to read back, one wait for the device.
  torch::Tensor total = torch::zeros({}, grads[0].options().dtype(torch::kFloat64));
  for (const auto& g : grads) total += g.sum(torch::kFloat64);
  const double local = total.item<double>();
  // A sum over the ranks is finite exactly when each rank's is (nan and inf survive the sum).
  found_inf_ = !std::isfinite(shard_sum_ ? shard_sum_(local) : local);
}

bool GradScaler::step(torch::optim::Optimizer& optimizer,
                      const std::vector<torch::Tensor>& params) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  unscale(params);
  if (found_inf_) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (found_inf_) {
    scale_ *= options_.backoff_factor;
    clean_steps_ = 0;
  } else if (++clean_steps_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    clean_steps_ = 0;
  }
  unscaled_ = false;
  found_inf_ = false;
}

void GradScaler::restore(const State& state) {
  scale_ = state.scale;
  clean_steps_ = state.clean_steps;
}

}  // namespace dptrain::train
