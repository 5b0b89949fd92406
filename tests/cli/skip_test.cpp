// The test binary itself, run directly as a developer would: a test that skips itself for want of
// a GPU must end as skipped, never as passed.
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
