// Autocast's per-thread state, kept and restored in one place: the dtypes it computes in for each
// device type, and its cache of low-precision weight copies. The trainer's autocast scope and
// dp's replica threads (which must compute as their caller does) both use these.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <array>

namespace dptrain::core {

// The device types dptrain trains on, each with an autocast dtype of its own.
inline constexpr std::array<c10::DeviceType, 2> kAutocastDeviceTypes = {c10::DeviceType::CPU,
                                                                        c10::DeviceType::CUDA};

// A thread's autocast dtypes. at::ThreadLocalState carries autocast's on/off switches to another
// thread, not its dtypes: these go with it.
class AutocastDtypes {
 public:
  static AutocastDtypes of_this_thread();
  void apply_to_this_thread() const;

 private:
  std::array<at::ScalarType, kAutocastDeviceTypes.size()> dtypes_{};
};

// A stretch of autocast computation. Leaving the outermost one clears the cast cache, which holds
// low-precision copies of the weights: the next step's weights are new, and a stale copy would be
// last step's.
class AutocastCacheScope {
 public:
  AutocastCacheScope() { at::autocast::increment_nesting(); }
  ~AutocastCacheScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  }
  AutocastCacheScope(const AutocastCacheScope&) = delete;
  AutocastCacheScope& operator=(const AutocastCacheScope&) = delete;
};

}  // namespace dptrain::core
