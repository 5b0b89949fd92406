#include "data/pnm_check.h"

#include <cstdint>

namespace dptrain::data {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Nine digits at most: every value a picture dptrain decodes can have, and none that overflows.
constexpr int kMaxDigits = 9;

}  // namespace

std::string pnm_problem(const std::string& pnm) {
  const char* const names[3] = {"width", "height", "maxval"};
  int64_t values[3] = {0, 0, 0};
  size_t at = 2;  // past "P5" or "P6"
  for (int i = 0; i < 3; ++i) {
    if (at >= pnm.size() || !(is_space(pnm[at]) || pnm[at] == '#')) {
      return std::string("header has no whitespace before its ") + names[i];
    }
    while (at < pnm.size() && (is_space(pnm[at]) || pnm[at] == '#')) {
      if (pnm[at] == '#') {
        while (at < pnm.size() && pnm[at] != '\n' && pnm[at] != '\r') ++at;
      } else {
        ++at;
      }
    }
    const size_t first = at;
    while (at < pnm.size() && is_digit(pnm[at]) && at - first < kMaxDigits) {
      values[i] = values[i] * 10 + (pnm[at++] - '0');
    }
    if (at == first) return std::string("header ends before its ") + names[i];
    if (at < pnm.size() && is_digit(pnm[at])) {
      return std::string(names[i]) + " has more than " + std::to_string(kMaxDigits) + " digits";
    }
  }
  const auto [width, height, maxval] = values;
  if (width == 0 || height == 0) {
    return "header declares " + std::to_string(width) + "x" + std::to_string(height) +
           " pixels: none to classify";
  }
  if (maxval != 255) {
    return "maxval is " + std::to_string(maxval) +
           ": dptrain reads 8-bit PGM/PPM of maxval 255 (convert it to 8-bit first)";
  }
  if (at >= pnm.size() || !is_space(pnm[at])) return "maxval is not followed by a whitespace byte";
  ++at;  // the one byte before the raster
  const int64_t channels = pnm[1] == '6' ? 3 : 1;
  // Both sides hold 9 digits at most: the product fits int64.
  const int64_t needed = width * height * channels;
  const auto held = static_cast<int64_t>(pnm.size() - at);
  if (held < needed) {
    return "pixels end after " + std::to_string(held) + " of the " + std::to_string(needed) +
           " bytes its " + std::to_string(width) + "x" + std::to_string(height) +
           " header declares (a truncated file)";
  }
  return "";
}

}  // namespace dptrain::data
