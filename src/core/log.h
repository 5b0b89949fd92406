// Logging through spdlog, to stderr, so that stdout carries only the epoch lines and d2l's
// summary line. Rank-aware: later ranks prefix their rank and log only warnings and errors.
#pragma once

#include <string>

namespace dptrain::core {

// level: trace, debug, info, warn, error or off. Throws a config error for anything else.
void init_logging(const std::string& level, int rank = 0);

}  // namespace dptrain::core
