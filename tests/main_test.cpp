// Catch2's main, with spdlog quietened so that test output stays readable. Catch2 2.x builds its
// session into the file that defines CATCH_CONFIG_RUNNER; 3.x has it in its library. On 2.x,
// main also reports the tests that skipped themselves (support/skip.h), which 3.x does itself.
// A run in which an assertion failed exits 1: Catch2 (2 and 3) exits with the number of failed
// assertions, and four of them gave the status CTest reads as "skipped" (kAllSkippedStatus).
#include <spdlog/spdlog.h>
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#else
#define CATCH_CONFIG_RUNNER
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>
#endif

#include <iostream>

#include "kernels/kernel_isa.h"
#include "support/skip.h"

namespace {

int g_test_cases_run = 0;
bool g_assertion_failed = false;

#if CATCH_VERSION_MAJOR < 3
using ListenerBase = Catch::TestEventListenerBase;
#else
using ListenerBase = Catch::EventListenerBase;
#endif

struct TestCaseCounter : ListenerBase {
  using ListenerBase::ListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    ++g_test_cases_run;
    if (stats.totals.assertions.failed > 0) g_assertion_failed = true;
    ListenerBase::testCaseEnded(stats);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(TestCaseCounter)

#if CATCH_VERSION_MAJOR < 3
// As Catch2 3 does: list the skipped tests, and exit 4 when every test that ran was skipped.
int report_skips(int failures) {
  const auto& skipped = dptrain::testing::skipped_tests();
  if (skipped.empty()) return failures;
  std::cout << skipped.size() << " of " << g_test_cases_run
            << " test cases were skipped, not passed:\n";
  for (const auto& name : skipped) std::cout << "  " << name << "\n";
  const bool all_skipped = static_cast<int>(skipped.size()) == g_test_cases_run;
  return failures == 0 && all_skipped ? dptrain::testing::kAllSkippedStatus : failures;
}
#else
int report_skips(int failures) {
  return failures;
}
#endif

int main(int argc, char* argv[]) {
  spdlog::set_level(spdlog::level::warn);
  // A -DDPTRAIN_KERNEL_ISA build above this CPU's level would die of SIGILL in the kernel tests.
  const auto isa = dptrain::kernels::kernel_isa();
  if (!isa.runs_here) {
    std::cerr << "this build keeps dptrain's CPU kernels at " << isa.level
              << " alone, which this CPU lacks: rebuild with another DPTRAIN_KERNEL_ISA\n";
    return 1;
  }
  const int status = report_skips(Catch::Session().run(argc, argv));
  return g_assertion_failed ? 1 : status;
}
