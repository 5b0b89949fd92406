// Whether output may carry terminal escape codes (colours, erasing a line): only to a terminal,
// never under NO_COLOR (no-color.org: set and not empty) or TERM=dumb, as the tools users know.
// And the reverse: text read from a file, made harmless to print (it carries no codes of its own).
#pragma once

#include <string>
#include <string_view>

namespace dptrain::core {

// The file descriptor is a terminal that is not TERM=dumb: a line may be redrawn in place.
bool is_live_terminal(int fd);

// is_live_terminal() and no NO_COLOR: escape codes may be written.
bool escape_codes_allowed(int fd);

// Whether printable() keeps line breaks and tabs, for text whose lines are its own (a log message
// of several lines), or escapes them too, for a value that must stay on its line (a table cell,
// a name quoted in a message).
enum class LineBreaks { kEscape, kKeep };

// `text` with everything a terminal would act on written out visibly, so that a file cannot set a
// window's title, write the clipboard (OSC 52) or redraw a line: C0 controls (ESC among them),
// carriage returns and DEL as \x1b, C1 controls (U+0080 to U+009F, which some terminals take as
// ESC [) as \u009b, Unicode's controls that reorder or break a line (U+202E, U+2028, ...) and
// what shows as no glyph (zero-width spaces and joiners, the soft hyphen, fillers, variation
// selectors, tags: "cat" and "cat\u200b" would look one) as \u202e or \U000e0061, and bytes
// that are no UTF-8 as \xff. Other UTF-8 passes as it is.
std::string printable(std::string_view text, LineBreaks breaks = LineBreaks::kEscape);

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates).
bool is_utf8(std::string_view text);

}  // namespace dptrain::core
