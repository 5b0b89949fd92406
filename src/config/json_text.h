// JSON text from files dptrain did not write (experiments, checkpoint records), parsed with a
// bound on nesting and on values: nlohmann's parser keeps its own stack, but flattening, comparing
// and freeing a value recurse, and a few megabytes of brackets would overflow the thread's stack;
// and each value costs some 50 bytes or more once parsed, so 2 MB of `{},` would cost 50 MB. Both
// are counted in one pass before the parser runs (a callback to the parser would do it too, but
// nlohmann then scans a container's parent again each time an object closes: quadratic).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dptrain::config {

// Experiments nest three deep; checkpoint records, with their config, four.
constexpr int kMaxJsonDepth = 64;
// A resolved experiment holds some hundred values, a checkpoint's record some thousands. Counted
// as the text's commas and opening brackets, about twice the values.
constexpr size_t kMaxJsonValues = size_t{1} << 19;

// Refuses, as an out_of_range saying which, text nested deeper than kMaxJsonDepth or of more than
// kMaxJsonValues values, in one pass that builds nothing: a file of JSON lines as a whole, too.
void check_json_size(const std::string& text);

// Throws nlohmann::json::exception for malformed text, and for text nested deeper than
// kMaxJsonDepth or of more than kMaxJsonValues values (an out_of_range saying so).
nlohmann::json parse_json(const std::string& text);

// An exception of parse_json in plain words: nlohmann's "[json.exception.parse_error.101] parse
// error at line 2, column 1: syntax error while parsing value - unexpected end of input; ..."
// becomes "line 2, column 1: unexpected end of input; ...".
std::string plain_json_error(const nlohmann::json::exception& e);

// The integer at `key` of object `j`: a json type_error naming the key when it is no integer that
// int64_t holds (nlohmann would cast a float such as 1e300, which is undefined), an out_of_range
// when it is absent, or `fallback` where one is given.
int64_t integer_at(const nlohmann::json& j, const char* key);
int64_t integer_at(const nlohmann::json& j, const char* key, int64_t fallback);
// The list of such integers at `key`; empty when absent.
std::vector<int64_t> integers_at(const nlohmann::json& j, const char* key);

}  // namespace dptrain::config
