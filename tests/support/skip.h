// Skipping a test that needs hardware this machine lacks, so that a skip never reads as a pass.
// Catch2 3 has SKIP: the test counts as skipped, and a run in which every test was skipped exits
// with status 4. Catch2 2.x has no such thing: there the test returns, main() lists it as
// skipped after the run and exits with the same status 4 when nothing else ran. CTest takes 4 as
// "skipped" (tests/CMakeLists.txt).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "support/catch.h"

namespace dptrain::testing {

constexpr int kAllSkippedStatus = 4;

// Catch2 2.x only: the running test's name and why it was skipped, and what was recorded.
void record_skip(const std::string& reason);
const std::vector<std::string>& skipped_tests();

}  // namespace dptrain::testing

// Skips the running test, saying why (something it needs is not on this machine).
#if CATCH_VERSION_MAJOR >= 3
#define DPTRAIN_SKIP(reason) SKIP(reason)
#else
#define DPTRAIN_SKIP(reason)                 \
  do {                                       \
    ::dptrain::testing::record_skip(reason); \
    return;                                  \
  } while (false)
#endif

#define DPTRAIN_NO_CUDA_REASON "[cuda] skipped: this LibTorch sees no CUDA device"

#if CATCH_VERSION_MAJOR >= 3
#define SKIP_WITHOUT_CUDA()                                         \
  do {                                                              \
    if (!torch::cuda::is_available()) SKIP(DPTRAIN_NO_CUDA_REASON); \
  } while (false)
#else
#define SKIP_WITHOUT_CUDA()                                    \
  do {                                                         \
    if (!torch::cuda::is_available()) {                        \
      ::dptrain::testing::record_skip(DPTRAIN_NO_CUDA_REASON); \
      return;                                                  \
    }                                                          \
  } while (false)
#endif
