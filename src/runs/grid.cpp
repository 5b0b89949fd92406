#include "runs/grid.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/error.h"

namespace dptrain::runs {
namespace {

// `text` without the spaces and tabs around it.
std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// `text` as a whole integer (a leading + allowed), else none.
std::optional<int64_t> integer_of(const std::string& text) {
  const char* first = text.data() + (text.rfind('+', 0) == 0 ? 1 : 0);
  const char* last = text.data() + text.size();
  int64_t value = 0;
  const auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc() || end != last) return std::nullopt;
  return value;
}

const char* const kValuesHint =
    "write --grid key.path=value1,value2 (a value with commas in brackets or quotes: --grid "
    "'parallel.devices=[\"cpu\"],[\"cpu\",\"cpu\"]'), or choice(value1,value2)";
const char* const kRangeHint =
    "range(start,stop,step) counts from start up to stop, which it leaves out: "
    "range(0.1,0.5,0.1) is 0.1,0.2,0.3,0.4 and range(1,4) is 1,2,3";

[[noreturn]] void bad_axis(const std::string& spec, const std::string& what,
                           const std::string& hint = kValuesHint) {
  throw core::Error(core::ErrorCode::kUsage, "--grid " + spec + ": " + what, hint);
}

// `text` split at its commas but those inside brackets, braces or double quotes. `trim`: spaces
// around each value go (Hydra's functions allow them after a comma).
std::vector<std::string> split_values(const std::string& spec, const std::string& text, bool trim) {
  std::vector<std::string> values;
  std::string value;
  int depth = 0;
  bool in_quotes = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) in_quotes = !in_quotes;
    if (!in_quotes && (c == '[' || c == '{')) ++depth;
    if (!in_quotes && (c == ']' || c == '}')) --depth;
    if (c == ',' && depth == 0 && !in_quotes) {
      if (trim) value = trimmed(value);
      if (value.empty()) bad_axis(spec, "an empty value");
      values.push_back(value);
      value.clear();
    } else {
      value += c;
    }
  }
  if (depth != 0 || in_quotes) bad_axis(spec, "unbalanced brackets or quotes");
  return values;
}

// The arguments of Hydra's `name(...)` when the values are that call.
std::optional<std::string> call_arguments(const std::string& spec, const std::string& values,
                                          const std::string& name) {
  const std::string open = name + "(";
  if (values.rfind(open, 0) != 0) return std::nullopt;
  if (values.back() != ')') {
    bad_axis(spec, name + "( is not closed by a ) that ends the values",
             name == "range" ? kRangeHint : kValuesHint);
  }
  const std::string arguments =
      trimmed(values.substr(open.size(), values.size() - open.size() - 1));
  if (arguments.empty()) bad_axis(spec, name + "() holds no values");
  return arguments;
}

double number_of(const std::string& spec, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value)) {
    bad_axis(spec, "range(): " + text + " is no number", kRangeHint);
  }
  return value;
}

// The decimal places `value` shows at 15 significant digits (the most that a double keeps from
// any decimal): 0.1 has 1, 1e-05 has 5, 250 has 0.
int decimals_of(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.15g", value);
  const std::string shown = text;
  const size_t e = shown.find('e');
  const size_t dot = shown.find('.');
  int places = dot == std::string::npos ? 0 : static_cast<int>(shown.substr(0, e).size() - dot - 1);
  if (e != std::string::npos) places -= std::stoi(shown.substr(e + 1));
  return std::max(0, places);
}

// `value` at `places` decimals, trailing zeros dropped.
std::string decimal_text(double value, int places) {
  const int length = std::snprintf(nullptr, 0, "%.*f", places, value);
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::snprintf(text.data(), text.size(), "%.*f", places, value);
  text.resize(static_cast<size_t>(length));
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

// Hydra's range(start, stop, step): start, start + step, ... while short of stop; range(stop)
// starts at 0, and the step is 1 unless given. Integers stay integers. Floats are computed as
// start + i * step (no sum drifts) and written at the most decimals any argument shows: the float
// noise of 0.1 + 2 * 0.1 = 0.30000000000000004 lies far below that place, so 0.3 it is, and a
// value is compared with stop as written.
std::vector<std::string> range_values(const std::string& spec, const std::string& arguments) {
  const std::vector<std::string> given = split_values(spec, arguments, /*trim=*/true);
  if (given.size() > 3) bad_axis(spec, "range() takes start, stop and step", kRangeHint);
  const std::string start = given.size() == 1 ? "0" : given[0];
  const std::string stop = given.size() == 1 ? given[0] : given[1];
  const std::string step = given.size() == 3 ? given[2] : "1";
  std::vector<std::string> values;
  const auto add = [&](std::string value) {
    if (values.size() == kMaxGridValues) {
      bad_axis(spec, "more than " + std::to_string(kMaxGridValues) + " values",
               "take a larger step, or split the sweep");
    }
    values.push_back(std::move(value));
  };
  const auto a = integer_of(start), b = integer_of(stop), s = integer_of(step);
  if (a && b && s) {
    if (*s == 0) bad_axis(spec, "a step of 0", kRangeHint);
    for (int64_t v = *a; *s > 0 ? v < *b : v > *b;) {
      add(std::to_string(v));
      if (__builtin_add_overflow(v, *s, &v)) break;
    }
  } else {
    const double from = number_of(spec, start), to = number_of(spec, stop),
                 by = number_of(spec, step);
    if (by == 0) bad_axis(spec, "a step of 0", kRangeHint);
    const int places = std::max({decimals_of(from), decimals_of(to), decimals_of(by)});
    for (size_t i = 0;; ++i) {
      std::string value = decimal_text(from + static_cast<double>(i) * by, places);
      const double v = std::strtod(value.c_str(), nullptr);
      if (by > 0 ? v >= to : v <= to) break;
      add(std::move(value));
    }
  }
  if (values.empty()) {
    bad_axis(spec, "range() holds no values: the step must lead from start towards stop",
             kRangeHint);
  }
  return values;
}

}  // namespace

GridAxis parse_grid_axis(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) bad_axis(spec, "no key=values");
  GridAxis axis{spec.substr(0, eq), {}};
  const std::string values = spec.substr(eq + 1);
  if (const auto arguments = call_arguments(spec, values, "range")) {
    axis.values = range_values(spec, *arguments);
  } else if (const auto arguments = call_arguments(spec, values, "choice")) {
    axis.values = split_values(spec, *arguments, /*trim=*/true);
  } else {
    axis.values = split_values(spec, values, /*trim=*/false);
  }
  if (axis.values.size() > kMaxGridValues) {
    bad_axis(spec, "more than " + std::to_string(kMaxGridValues) + " values", "split the sweep");
  }
  return axis;
}

std::vector<std::vector<std::string>> grid_points(const std::vector<GridAxis>& axes) {
  std::vector<std::vector<std::string>> points = {{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> longer;
    for (const auto& point : points) {
      for (const auto& value : axis.values) {
        longer.push_back(point);
        longer.back().push_back(axis.key + "=" + value);
      }
    }
    points = std::move(longer);
  }
  return points;
}

}  // namespace dptrain::runs
