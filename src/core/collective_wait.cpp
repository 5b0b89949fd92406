#include "core/collective_wait.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/interrupt.h"

namespace dptrain::core {
namespace {

using Clock = std::chrono::steady_clock;

std::mutex g_mutex;  // guards g_what
std::string g_what;  // the collective being waited for
std::atomic<bool> g_waiting{false};
std::atomic<Clock::rep> g_since{0};  // when the wait began

// Watches for a notice or a Ctrl-C that a collective keeps from being acted on; never returns.
[[noreturn]] void watch() {
  std::optional<Clock::time_point> noticed;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const bool preempted = preemption_requested();
    if (!preempted && !interrupt_requested()) continue;
    const Clock::time_point now = Clock::now();
    if (!noticed) noticed = now;
    if (!g_waiting) continue;
    const Clock::time_point since{Clock::duration(g_since.load())};
    if (now - std::max(*noticed, since) < kStuckAfterNotice) continue;
    std::string what;
    {
      const std::lock_guard<std::mutex> lock(g_mutex);
      what = g_what;
    }
    // Ctrl-C asked to stop without a checkpoint: 130, as it would have ended between steps.
    const std::string asked =
        preempted ? preemption_signal_name() + std::string(" (a preemption notice)") : "Ctrl-C";
    spdlog::error(
        "{}{} came while this rank waited for {}, and {} s later it still waits: another rank is "
        "stuck or gone; stopping now, without a checkpoint",
        preempted ? "distributed error: " : "interrupted: ", asked, what,
        kStuckAfterNotice.count());
    spdlog::default_logger()->flush();
    std::_Exit(exit_status(preempted ? ErrorCode::kDistributed : ErrorCode::kInterrupted));
  }
}

void start_watch_once() {
  static std::once_flag once;
  std::call_once(once, [] { std::thread(watch).detach(); });
}

}  // namespace

CollectiveWait::CollectiveWait(const std::string& what) {
  start_watch_once();
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_what = what;
  }
  g_since = Clock::now().time_since_epoch().count();
  g_waiting = true;
}

CollectiveWait::~CollectiveWait() {
  g_waiting = false;
}

}  // namespace dptrain::core
