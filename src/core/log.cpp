#include "core/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include "core/error.h"
#include "core/terminal.h"

namespace dptrain::core {
namespace {

// The message of a log line, made printable (core/terminal.h): messages quote what files hold (a
// state_dict's names, a config's values), and nothing in them may reach the terminal as a code.
// One message may still span several lines; each after the first is indented, so that a line
// break in a file's text cannot start what reads as a log line of its own.
class PrintableMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text =
        printable(std::string_view(msg.payload.data(), msg.payload.size()), LineBreaks::kKeep);
    for (const char c : text) {
      dest.push_back(c);
      if (c == '\n') dest.append(std::string_view("  "));
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PrintableMessage>();
  }
};

}  // namespace

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
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PrintableMessage>('*').set_pattern(
      rank == 0 ? "[%H:%M:%S] %^%l%$: %*"
                : "[%H:%M:%S] [rank " + std::to_string(rank) + "] %^%l%$: %*");
  logger->set_formatter(std::move(formatter));
  logger->set_level(rank == 0 ? parsed : std::max(parsed, spdlog::level::warn));
  spdlog::set_default_logger(logger);
}

}  // namespace dptrain::core
