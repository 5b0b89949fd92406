#include "config/json_merge.h"

#include <vector>

#include "config/schema.h"
#include "core/error.h"

namespace dptrain::config {
namespace {

using core::Error;
using core::ErrorCode;
using nlohmann::json;

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "a list";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "true or false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "null";
  }
}

[[noreturn]] void fail(const std::string& source, const std::string& path, const std::string& what,
                       const std::string& hint) {
  throw Error(ErrorCode::kConfig, source + ": " + path + ": " + what, hint);
}

// "did you mean optimizer.lr?" for the keys near what was typed (`typed`: the whole path given,
// which for --set may go on past the unknown part), else the keys at this level.
std::string unknown_key_hint(const json& base, const std::string& typed) {
  const std::vector<std::string> near = near_keys(typed);
  std::string hint;
  for (size_t i = 0; i < near.size(); ++i) {
    hint += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + near[i];
  }
  if (!hint.empty()) return "did you mean " + hint + "?";
  for (const auto& item : base.items()) hint += (hint.empty() ? "" : ", ") + item.key();
  return "known keys here: " + hint + " (`dptrain config --keys` lists every key)";
}

void check_unknown(const json& base, const std::string& key, const std::string& path,
                   const std::string& typed, const std::string& source) {
  if (base.contains(key)) return;
  fail(source, path, "unknown key", unknown_key_hint(base, typed));
}

// Whether `given` has the JSON type of the default `expected` (an integer where a number is
// expected is fine; a fraction where an integer is expected is not).
bool same_type(const json& expected, const json& given) {
  if (expected.is_number_integer()) return given.is_number_integer();
  if (expected.is_number_float()) return given.is_number();
  return expected.type() == given.type();
}

// Returns the value to store: `given`, or `given` adapted where the schema allows it.
json checked_value(const json& expected, const json& given, const std::string& path,
                   const std::string& source) {
  if (expected.is_string() && given.is_null()) return "";  // null: "not set"
  // A single value stands for a one-element list: "devices": "cpu".
  if (expected.is_array() && !expected.empty() && same_type(expected.front(), given)) {
    return json::array({given});
  }
  if (!same_type(expected, given)) {
    std::string hint = "write " + type_name(expected) + ", as in the default: " + expected.dump();
    if (expected.is_number_integer() && given.is_number_float()) {
      hint = "write a whole number without a decimal point";
    }
    fail(source, path,
         "expected " + type_name(expected) + ", got " + type_name(given) + " " + given.dump(),
         hint);
  }
  if (expected.is_array() && !expected.empty()) {
    for (size_t i = 0; i < given.size(); ++i) {
      checked_value(expected.front(), given[i], path + "[" + std::to_string(i) + "]", source);
    }
  }
  return given;
}

void record_sources(const json& value, const std::string& path, const std::string& source,
                    KeySources& sources) {
  sources[path] = source;
  if (!value.is_object()) return;
  for (const auto& item : value.items()) {
    record_sources(item.value(), join(path, item.key()), source, sources);
  }
}

void merge_at(json& base, const json& overlay, const std::string& prefix, const std::string& source,
              KeySources& sources) {
  for (const auto& item : overlay.items()) {
    const std::string path = join(prefix, item.key());
    check_unknown(base, item.key(), path, path, source);
    json& slot = base[item.key()];
    if (slot.is_object() && item.value().is_object()) {
      merge_at(slot, item.value(), path, source, sources);
      continue;
    }
    slot = checked_value(slot, item.value(), path, source);
    record_sources(slot, path, source, sources);
  }
}

}  // namespace

void merge_checked(json& base, const json& overlay, const std::string& source,
                   KeySources& sources) {
  if (!overlay.is_object()) {
    fail(source, "(top level)", "expected an object, got " + type_name(overlay),
         "an experiment file is a JSON object such as {\"train\": {\"epochs\": 10}}");
  }
  merge_at(base, overlay, "", source, sources);
}

void set_checked(json& base, const std::string& key_path, const json& value,
                 const std::string& source, KeySources& sources) {
  json* node = &base;
  std::string prefix;
  size_t start = 0;
  while (true) {
    const size_t dot = key_path.find('.', start);
    const std::string key = key_path.substr(start, dot == std::string::npos ? dot : dot - start);
    const std::string path = join(prefix, key);
    if (key.empty()) {
      fail(source, key_path, "empty key in the path", "write a dotted path such as train.epochs");
    }
    if (!node->is_object()) {
      fail(source, path, prefix + " is not an object, so it has no key \"" + key + "\"",
           "write a dotted path such as train.epochs");
    }
    check_unknown(*node, key, path, key_path, source);
    if (dot == std::string::npos) {
      merge_at(*node, json::object({{key, value}}), prefix, source, sources);
      return;
    }
    node = &(*node)[key];
    prefix = path;
    start = dot + 1;
  }
}

}  // namespace dptrain::config
