#include "core/autocast.h"

#include "core/torch_compat.h"

namespace dptrain::core {

AutocastDtypes AutocastDtypes::of_this_thread() {
  AutocastDtypes d;
  for (size_t i = 0; i < kAutocastDeviceTypes.size(); ++i) {
    d.dtypes_[i] = compat::autocast_dtype(kAutocastDeviceTypes[i]);
  }
  return d;
}

void AutocastDtypes::apply_to_this_thread() const {
  for (size_t i = 0; i < kAutocastDeviceTypes.size(); ++i) {
    compat::set_autocast_dtype(kAutocastDeviceTypes[i], dtypes_[i]);
  }
}

}  // namespace dptrain::core
