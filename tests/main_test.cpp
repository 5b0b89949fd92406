// Catch2's main, with spdlog quietened so that test output stays readable.
#define CATCH_CONFIG_RUNNER
#include <spdlog/spdlog.h>
#include <catch2/catch.hpp>

int main(int argc, char* argv[]) {
  spdlog::set_level(spdlog::level::warn);
  return Catch::Session().run(argc, argv);
}
