#include "config/future_keys.h"

#include <map>

namespace dptrain::config {

std::string future_feature(const std::string& key_path) {
  static const std::map<std::string, std::string> kFuture = {
      {"optimizer.grad_clip_norm", "mixed precision and gradient clipping"},
  };
  const auto it = kFuture.find(key_path);
  return it == kFuture.end() ? std::string() : it->second;
}

}  // namespace dptrain::config
