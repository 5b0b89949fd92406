#include "core/terminal.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace dptrain::core {

bool is_live_terminal(int fd) {
  const char* term = std::getenv("TERM");
  return isatty(fd) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
}

bool escape_codes_allowed(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  return is_live_terminal(fd) && !(no_color != nullptr && no_color[0] != '\0');
}

}  // namespace dptrain::core
