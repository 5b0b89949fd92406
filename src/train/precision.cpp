#include "train/precision.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "core/torch_compat.h"

namespace dptrain::train {

std::optional<at::ScalarType> autocast_dtype(config::Precision precision) {
  if (precision == config::Precision::kFp16) return at::kHalf;
  if (precision == config::Precision::kBf16) return at::kBFloat16;
  return std::nullopt;
}

void check_precision_devices(config::Precision precision,
                             const std::vector<torch::Device>& devices) {
  if (precision != config::Precision::kFp16) return;
  for (const auto& d : devices) {
    if (d.is_cpu()) {
      throw core::Error(core::ErrorCode::kConfig,
                        "precision: \"fp16\" needs GPUs, but this run trains on " + d.str(),
                        "use \"bf16\" on a CPU (autocast there computes in bfloat16), or \"fp32\"");
    }
  }
}

namespace {

// LibTorch 1.13 sends bfloat16 convolutions and matrix products to oneDNN wherever the CPU's own
// flags say AVX-512, and a oneDNN held below that (DNNL_MAX_CPU_ISA=AVX2, as scripts/check.sh isa
// does) has none to run them: every step failed with "could not create a primitive descriptor
// iterator". Then LibTorch's own bfloat16 kernels run, as on a CPU without AVX-512.
void use_bf16_kernels_that_run_here() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!at::globalContext().userEnabledMkldnn()) return;
    try {
      const auto x = torch::ones({1, 1, 3, 3}, torch::kBFloat16);
      (void)torch::conv2d(x, torch::ones({1, 1, 3, 3}, torch::kBFloat16));
    } catch (const std::exception&) {  // oneDNN's own dnnl::error, not LibTorch's c10::Error
      at::globalContext().setUserEnabledMkldnn(false);
      spdlog::warn(
          "oneDNN runs no bfloat16 convolution at the instruction set it is held to here: "
          "LibTorch's own bfloat16 kernels run instead (slower)");
    }
  });
}

}  // namespace

AutocastScope::AutocastScope(const std::vector<torch::Device>& devices,
                             std::optional<at::ScalarType> dtype) {
  if (!dtype) return;
  const bool on_cpu = std::any_of(devices.begin(), devices.end(),
                                  [](const torch::Device& d) { return d.is_cpu(); });
  if (*dtype == at::kBFloat16 && on_cpu) use_bf16_kernels_that_run_here();
  for (const auto& d : devices) {
    const c10::DeviceType type = d.type();
    bool seen = false;
    for (const auto& s : saved_) seen |= s.type == type;
    if (seen) continue;
    saved_.push_back(
        {type, core::compat::autocast_enabled(type), core::compat::autocast_dtype(type)});
    core::compat::set_autocast_enabled(type, true);
    core::compat::set_autocast_dtype(type, *dtype);
  }
  cache_.emplace();
}

AutocastScope::~AutocastScope() {
  if (saved_.empty()) return;
  for (const auto& s : saved_) {
    core::compat::set_autocast_enabled(s.type, s.enabled);
    core::compat::set_autocast_dtype(s.type, s.dtype);
  }
  cache_.reset();  // clears the cast cache when this was the outermost scope
}

}  // namespace dptrain::train
