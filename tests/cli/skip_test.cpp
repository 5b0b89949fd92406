// The test binary itself, run directly as a developer would: a test that skips itself for want of
// a GPU must end as skipped, never as passed, and a failing one as failed, never as skipped.
#include "support/skip.h"
#include "support/catch.h"
#include "support/fixtures.h"

#include <filesystem>

using namespace dptrain::testing;

TEST_CASE("a [cuda] test run directly without a GPU ends as skipped, not passed", "[cli]") {
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  const auto result =
      run_program(self, "'fp16 with loss scaling and bf16 on cuda:0 stay close to fp32'");
  if (torch::cuda::is_available()) {
    CHECK(result.status == 0);  // there it runs for real
    return;
  }
  INFO(result.out);
  CHECK(result.status == kAllSkippedStatus);
  CHECK_THAT(result.out, ContainsSubstring(DPTRAIN_NO_CUDA_REASON));
  CHECK_THAT(result.out, ContainsSubstring("skipped"));
}

// Hidden ([.]): run only by the test below, through its tag.
TEST_CASE("four failed checks, for the exit status test alone", "[.][exit-status-probe]") {
  for (int i = 0; i < 4; ++i) CHECK(i < 0);
}

TEST_CASE("a test with four failed checks exits as failed, not with the skipped status", "[cli]") {
  // Catch2 exits with the number of failed assertions: four was CTest's "skipped".
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  const auto result = run_program(self, "'[exit-status-probe]'");
  INFO(result.out);
  CHECK_THAT(result.out, ContainsSubstring("4 failed"));
  CHECK(result.status == 1);
}
