// Mixed precision: `precision` fp32, fp16 or bf16. fp16 and bf16 run the forward pass under
// autocast (matmuls and convolutions in the low dtype, reductions and the loss in fp32); fp16 also
// needs a GradScaler. Autocast's cast cache holds the low-precision copies of the weights, so each
// scope clears it on leaving: the next step's weights are new.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "config/choices.h"
#include "core/autocast.h"

namespace dptrain::train {

// The dtype autocast computes in: none for fp32.
std::optional<at::ScalarType> autocast_dtype(config::Precision precision);

// fp16 autocast exists on GPUs only: a config error naming the CPU device otherwise.
void check_precision_devices(config::Precision precision,
                             const std::vector<torch::Device>& devices);

// Autocast on for these devices' types in `dtype`, restored at the end of the scope; a no-op for
// no dtype.
class AutocastScope {
 public:
  AutocastScope(const std::vector<torch::Device>& devices, std::optional<at::ScalarType> dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  struct Saved {
    c10::DeviceType type;
    bool enabled;
    at::ScalarType dtype;
  };
  std::vector<Saved> saved_;
  std::optional<core::AutocastCacheScope> cache_;  // none when autocast is off
};

}  // namespace dptrain::train
