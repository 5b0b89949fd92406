// A monotonic stopwatch for epoch and phase timings, and durations as messages say them.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace dptrain::core {

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

// "2 s", "0.3 s", "600 s".
inline std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

}  // namespace dptrain::core
