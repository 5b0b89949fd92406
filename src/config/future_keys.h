// What the schema knows beyond the defaults themselves: keys that later versions add, so that
// asking for them is a clear "not supported yet" rather than an unknown key or a silent fallback.
#pragma once

#include <string>

namespace dptrain::config {

// The feature a dotted key path belongs to when that feature has not landed yet; empty otherwise.
std::string future_feature(const std::string& key_path);

}  // namespace dptrain::config
