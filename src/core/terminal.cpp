#include "core/terminal.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace dptrain::core {

bool is_live_terminal(int fd) {
  const char* term = std::getenv("TERM");
  return isatty(fd) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
}

bool escape_codes_allowed(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  return is_live_terminal(fd) && !(no_color != nullptr && no_color[0] != '\0');
}

namespace {

std::string hex_escape(const char* prefix, unsigned value, int digits) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(prefix);
  for (int d = digits - 1; d >= 0; --d) out += kDigits[(value >> (4 * d)) & 15];
  return out;
}

// The length of the well-formed UTF-8 sequence of two or more bytes at `at` (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF), or 0.
size_t utf8_length(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(at);
  const size_t length = lead >= 0xc2 && lead <= 0xdf   ? 2
                        : lead >= 0xe0 && lead <= 0xef ? 3
                        : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                       : 0;
  if (length == 0 || text.size() - at < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xc0) != 0x80) return 0;
  }
  const uint8_t second = byte(at + 1);
  if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second > 0x9f) ||
      (lead == 0xf0 && second < 0x90) || (lead == 0xf4 && second > 0x8f)) {
    return 0;
  }
  return length;
}

// The code point of the well-formed sequence of `length` bytes at `at`.
unsigned code_point(std::string_view text, size_t at, size_t length) {
  const auto byte = [&](size_t i) {
    return static_cast<unsigned>(static_cast<uint8_t>(text[at + i]));
  };
  unsigned code = byte(0) & (0x7fu >> length);
  for (size_t i = 1; i < length; ++i) code = code << 6 | (byte(i) & 0x3f);
  return code;
}

// Whether a terminal shows `code` as nothing, or as something that moves what follows: Unicode's
// bidirectional controls (as in "Trojan Source"), the line and paragraph separators, and what
// shows as no glyph at all, so that "cat" and "cat" + U+200B would look one name (zero-width
// spaces and joiners, the soft hyphen, fillers, variation selectors, invisible operators, tags).
bool invisible_or_reordering(unsigned code) {
  static constexpr std::pair<unsigned, unsigned> kRanges[] = {
      {0x00ad, 0x00ad},   {0x034f, 0x034f},  {0x061c, 0x061c}, {0x115f, 0x1160}, {0x17b4, 0x17b5},
      {0x180b, 0x180f},   {0x200b, 0x200f},  {0x2028, 0x202e}, {0x2060, 0x206f}, {0x3164, 0x3164},
      {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},  {0xffa0, 0xffa0}, {0xfff0, 0xfffb}, {0x1bca0, 0x1bca3},
      {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff}};
  for (const auto& [first, last] : kRanges) {
    if (code >= first && code <= last) return true;
  }
  return false;
}

}  // namespace

std::string printable(std::string_view text, LineBreaks breaks) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const auto c = static_cast<uint8_t>(text[at]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++at;
    } else if ((c == '\n' || c == '\t') && breaks == LineBreaks::kKeep) {
      out += static_cast<char>(c);
      ++at;
    } else if (c < 0x80) {
      out += hex_escape("\\x", c, 2);
      ++at;
    } else if (const size_t length = utf8_length(text, at); length == 0) {
      out += hex_escape("\\x", c, 2);
      ++at;
    } else if (c == 0xc2 && static_cast<uint8_t>(text[at + 1]) < 0xa0) {  // C1: U+0080..U+009F
      out += hex_escape("\\u00", static_cast<uint8_t>(text[at + 1]), 2);
      at += 2;
    } else if (const unsigned code = code_point(text, at, length); invisible_or_reordering(code)) {
      out += code > 0xffff ? hex_escape("\\U", code, 8) : hex_escape("\\u", code, 4);
      at += length;
    } else {
      out.append(text.substr(at, length));
      at += length;
    }
  }
  return out;
}

bool is_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    if (static_cast<uint8_t>(text[at]) < 0x80) {
      ++at;
      continue;
    }
    const size_t length = utf8_length(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

}  // namespace dptrain::core
