// Dynamic loss scaling for fp16, with the semantics of torch.cuda.amp.GradScaler (LibTorch has no
// C++ one): the loss is multiplied by the scale before backward so that small fp16 gradients do
// not flush to zero; the gradients are divided by it again before clipping and the step; a step
// whose gradients hold inf or nan is skipped and the scale halved; after growth_interval clean
// steps in a row the scale doubles. Disabled, every call is a pass-through.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "run/resume_point.h"

namespace dptrain::train {

struct GradScalerOptions {
  bool enabled = true;
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  bool enabled() const { return options_.enabled; }
  // When each rank unscales only its shard of the gradients (ZeRO), the ranks must agree on inf or
  // nan, or they would step different steps: `sum` adds a value over the ranks.
  void agree_across_shards(std::function<double(double)> sum) { shard_sum_ = std::move(sum); }
  double scale() const { return scale_; }

  // loss * scale.
  torch::Tensor scale_loss(const torch::Tensor& loss) const;
  // Divides the (complete: after any all-reduce) gradients by the scale in place and notes whether
  // any of them is inf or nan. At most once per step, before clipping.
  void unscale(const std::vector<torch::Tensor>& params);
  // Steps `optimizer` unless the gradients held inf or nan (unscaling them first if unscale() was
  // not called); returns whether it stepped.
  bool step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params);
  // The end of a step: halves the scale after a skipped step, doubles it after growth_interval
  // clean ones.
  void update();

  // What a checkpoint keeps.
  using State = run::ScalerState;
  State state() const { return {scale_, clean_steps_}; }
  void restore(const State& state);

 private:
  GradScalerOptions options_;
  double scale_;
  int64_t clean_steps_ = 0;
  bool unscaled_ = false;   // in this step
  bool found_inf_ = false;  // in this step's gradients
  std::function<double(double)> shard_sum_;
};

}  // namespace dptrain::train
