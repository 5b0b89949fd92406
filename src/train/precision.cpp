#include "train/precision.h"

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

AutocastScope::AutocastScope(const std::vector<torch::Device>& devices,
                             std::optional<at::ScalarType> dtype) {
  if (!dtype) return;
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
