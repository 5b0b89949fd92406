#include "config/config.h"

#include <nlohmann/json.hpp>

#include "config/schema.h"

namespace dptrain::config {

nlohmann::json to_json(const Config& c) {
  nlohmann::json tree = nlohmann::json::object();
  for (const auto& key : schema()) tree[key_pointer(key.path)] = key.get(c);
  return tree;
}

nlohmann::json::json_pointer key_pointer(const std::string& path) {
  std::string pointer = "/" + path;
  for (char& ch : pointer) {
    if (ch == '.') ch = '/';
  }
  return nlohmann::json::json_pointer(pointer);
}

}  // namespace dptrain::config
