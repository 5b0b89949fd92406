#include "config/json_text.h"

namespace dptrain::config {

nlohmann::json parse_json(const std::string& text) {
  using nlohmann::json;
  const json::parser_callback_t bounded = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) {
      throw json::out_of_range::create(
          406, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", nullptr);
    }
    return true;
  };
  return json::parse(text, bounded);
}

}  // namespace dptrain::config
