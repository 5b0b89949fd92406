#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include "core/error.h"
#include "core/terminal.h"

namespace dptrain::core {

void init_logging(const std::string& level, int rank) {
  const auto parsed = spdlog::level::from_str(level);
  // from_str answers "off" for any name it does not know; only "off" itself may mean off.
  if (parsed == spdlog::level::off && level != "off") {
    throw Error(ErrorCode::kConfig, "log.level: unknown level \"" + level + "\"",
                "use one of trace, debug, info, warn, error, off");
  }
  spdlog::drop("dptrain");  // re-initialising (tests, a second run in one process) replaces it
  auto logger = spdlog::stderr_color_mt("dptrain", escape_codes_allowed(STDERR_FILENO)
                                                       ? spdlog::color_mode::automatic
                                                       : spdlog::color_mode::never);
  logger->set_pattern(rank == 0 ? "[%H:%M:%S] %^%l%$: %v"
                                : "[%H:%M:%S] [rank " + std::to_string(rank) + "] %^%l%$: %v");
  logger->set_level(rank == 0 ? parsed : std::max(parsed, spdlog::level::warn));
  spdlog::set_default_logger(logger);
}

}  // namespace dptrain::core
