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

// How long a wait that gave up lasted, as a message says it: "within 600 s" when it used (nearly)
// all of `allowed`, else "after 3.1 s (of 600 s allowed)": one that failed early (a connection
// refused) must not claim to have waited the whole timeout.
inline std::string waited_text(std::chrono::milliseconds elapsed,
                               std::chrono::milliseconds allowed) {
  // Within the allowance, or a little over it (a wait that ends on its deadline); a client that
  // overran it by more (LibTorch 2.x's TCPStore backs off past its deadline) says by how much.
  if (elapsed >= allowed * 99 / 100 && elapsed <= allowed * 11 / 10) {
    return "within " + seconds_text(allowed);
  }
  const auto tenths = std::chrono::milliseconds(elapsed.count() / 100 * 100);
  return "after " + seconds_text(tenths) + " (of " + seconds_text(allowed) + " allowed)";
}

}  // namespace dptrain::core
