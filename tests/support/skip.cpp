#include "support/skip.h"

#include <iostream>

namespace dptrain::testing {
namespace {

std::vector<std::string>& skips() {
  static std::vector<std::string> names;
  return names;
}

}  // namespace

void record_skip(const std::string& reason) {
#if CATCH_VERSION_MAJOR < 3
  skips().push_back(Catch::getResultCapture().getCurrentTestName());
#endif
  std::cout << reason << std::endl;
}

const std::vector<std::string>& skipped_tests() {
  return skips();
}

}  // namespace dptrain::testing
