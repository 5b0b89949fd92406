// A monotonic stopwatch for epoch and phase timings.
#pragma once

#include <chrono>

namespace dptrain::core {

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

}  // namespace dptrain::core
