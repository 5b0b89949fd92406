#include "config/json_text.h"

#include <string>

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

std::string plain_json_error(const nlohmann::json::exception& e) {
  std::string text = e.what();
  // "[json.exception.parse_error.101] " names nlohmann's class and number: nothing for a reader.
  if (text.rfind("[json.exception.", 0) == 0) {
    const size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  for (const char* noise :
       {"parse error at ", "syntax error while parsing value - ",
        "syntax error while parsing object key - ",
        "syntax error while parsing object separator - ", "syntax error while parsing object - ",
        "syntax error while parsing array - "}) {
    const size_t at = text.find(noise);
    if (at != std::string::npos) text.erase(at, std::char_traits<char>::length(noise));
  }
  return text;
}

}  // namespace dptrain::config
