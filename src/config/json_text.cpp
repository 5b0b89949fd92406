#include "config/json_text.h"

#include <string>

namespace dptrain::config {

// Outside strings, each '[' or '{' opens a level and each ',' starts another value. Malformed
// text is the parser's to report.
void check_json_size(const std::string& text) {
  using nlohmann::json;
  int depth = 0;
  size_t values = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character, a quote among them
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == ']' || c == '}') --depth;
    if ((c == '[' || c == '{') && ++depth > kMaxJsonDepth) {
      throw json::out_of_range::create(
          406, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", nullptr);
    }
    if ((c == ',' || c == '[' || c == '{') && ++values > kMaxJsonValues) {
      throw json::out_of_range::create(
          406, "more than " + std::to_string(kMaxJsonValues) + " values", nullptr);
    }
  }
}

nlohmann::json parse_json(const std::string& text) {
  check_json_size(text);
  return nlohmann::json::parse(text);
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

namespace {

int64_t as_integer(const nlohmann::json& v, const char* key) {
  if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
    return v.get<int64_t>();
  }
  throw nlohmann::json::type_error::create(
      302, std::string(key) + ": not an integer that 64 bits hold (a " + v.type_name() + ")",
      nullptr);
}

}  // namespace

int64_t integer_at(const nlohmann::json& j, const char* key) {
  return as_integer(j.at(key), key);
}

int64_t integer_at(const nlohmann::json& j, const char* key, int64_t fallback) {
  const auto found = j.find(key);
  return found == j.end() ? fallback : as_integer(*found, key);
}

std::vector<int64_t> integers_at(const nlohmann::json& j, const char* key) {
  std::vector<int64_t> values;
  const auto found = j.find(key);
  if (found == j.end()) return values;
  if (!found->is_array()) {
    throw nlohmann::json::type_error::create(
        302, std::string(key) + ": not a list (a " + std::string(found->type_name()) + ")",
        nullptr);
  }
  for (const auto& v : *found) values.push_back(as_integer(v, key));
  return values;
}

}  // namespace dptrain::config
