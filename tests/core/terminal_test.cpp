// Text from files made harmless to print, and waits that say how long they really lasted.
#include "core/terminal.h"
#include "core/timer.h"
#include "support/catch.h"

using dptrain::core::LineBreaks;
using dptrain::core::printable;

TEST_CASE("printable() writes out every code a terminal would act on, and keeps other UTF-8",
          "[core][security]") {
  // A window title (OSC 0), the clipboard (OSC 52), a line redrawn (CR, CSI K), a bell.
  CHECK(printable("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07");
  CHECK(printable("\x1b]52;c;ZXZpbA==\x1b\\") == "\\x1b]52;c;ZXZpbA==\\x1b\\");
  CHECK(printable("bad\r\x1b[KLooks fine: 0 errors") == "bad\\x0d\\x1b[KLooks fine: 0 errors");
  CHECK(printable(std::string("nul\0del\x7f", 8)) == "nul\\x00del\\x7f");
  // C1 controls in UTF-8 (U+009B is CSI to some terminals), and bytes that are no UTF-8.
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\u009b31m");
  CHECK(printable("\xff\xfe and \xc0\xaf and \xed\xa0\x80") ==
        "\\xff\\xfe and \\xc0\\xaf and \\xed\\xa0\\x80");
  CHECK(printable("\xe2\x80") == "\\xe2\\x80");  // cut short
  // What reorders or breaks a line: right-to-left override, isolates, the line separator.
  CHECK(printable("a\xe2\x80\xae"
                  "b\xe2\x81\xa6"
                  "c\xe2\x80\xa8"
                  "d") == "a\\u202eb\\u2066c\\u2028d");
  // What hides between letters: zero-width space and joiner, word joiner, byte-order mark.
  CHECK(printable("cat\xe2\x80\x8b"
                  "a\xe2\x80\x8d"
                  "b\xe2\x81\xa0"
                  "c\xef\xbb\xbf") == "cat\\u200ba\\u200db\\u2060c\\ufeff");
  // The soft hyphen, a Hangul filler, a variation selector and a tag letter (four bytes).
  CHECK(printable("a\xc2\xad"
                  "b\xe3\x85\xa4"
                  "c\xef\xb8\x8f"
                  "d\xf3\xa0\x81\xa1") == "a\\u00adb\\u3164c\\ufe0fd\\U000e0061");
  // Printable UTF-8 passes whole: accents, CJK, emoji, and U+00A0 just past the C1 range.
  CHECK(printable("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x99\x82 \xc2\xa0") ==
        "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x99\x82 \xc2\xa0");
  // Line breaks and tabs: escaped in a value, kept in a message of several lines.
  CHECK(printable("a\nb\tc") == "a\\x0ab\\x09c");
  CHECK(printable("a\nb\tc\r", LineBreaks::kKeep) == "a\nb\tc\\x0d");
  // What it writes is printable already: a second pass changes nothing.
  CHECK(printable(printable("\x1b[31m\xc2\x9b\xff")) == printable("\x1b[31m\xc2\x9b\xff"));
}

TEST_CASE("a wait that failed early says how long it lasted, not the whole timeout", "[core]") {
  using std::chrono::milliseconds;
  CHECK(dptrain::core::waited_text(milliseconds(600000), milliseconds(600000)) == "within 600 s");
  CHECK(dptrain::core::waited_text(milliseconds(3170), milliseconds(600000)) ==
        "after 3.1 s (of 600 s allowed)");
  CHECK(dptrain::core::waited_text(milliseconds(40), milliseconds(2000)) ==
        "after 0 s (of 2 s allowed)");
}
