// JSON text from files dptrain did not write (experiments, checkpoint records), parsed with a
// bound on nesting: nlohmann's parser keeps its own stack, but flattening, comparing and freeing
// a value recurse, and a few megabytes of brackets would overflow the thread's stack.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dptrain::config {

// Experiments nest three deep; checkpoint records, with their config, four.
constexpr int kMaxJsonDepth = 64;

// Throws nlohmann::json::exception for malformed text, and for text nested deeper than
// kMaxJsonDepth (an out_of_range saying so).
nlohmann::json parse_json(const std::string& text);

// An exception of parse_json in plain words: nlohmann's "[json.exception.parse_error.101] parse
// error at line 2, column 1: syntax error while parsing value - unexpected end of input; ..."
// becomes "line 2, column 1: unexpected end of input; ...".
std::string plain_json_error(const nlohmann::json::exception& e);

}  // namespace dptrain::config
