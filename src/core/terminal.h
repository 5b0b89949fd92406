// Whether output may carry terminal escape codes (colours, erasing a line): only to a terminal,
// never under NO_COLOR (no-color.org: set and not empty) or TERM=dumb, as the tools users know.
#pragma once

namespace dptrain::core {

// The file descriptor is a terminal that is not TERM=dumb: a line may be redrawn in place.
bool is_live_terminal(int fd);

// is_live_terminal() and no NO_COLOR: escape codes may be written.
bool escape_codes_allowed(int fd);

}  // namespace dptrain::core
