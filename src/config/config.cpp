#include "config/config.h"

#include <nlohmann/json.hpp>

#include "config/schema.h"

namespace dptrain::config {

nlohmann::json to_json(const Config& c) {
  nlohmann::json tree = nlohmann::json::object();
  for (const auto& key : schema()) tree[key_pointer(key.path)] = key.get(c);
  return tree;
}

}  // namespace dptrain::config
