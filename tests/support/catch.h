// The one include of Catch2 for every test file. Catch2 2.x (Debian 12) has a single header, Approx
// at global scope and Catch::Contains; 3.x (trixie and most distributions) splits the headers,
// keeps Approx in Catch:: and calls the matcher Catch::Matchers::ContainsSubstring. The test
// sources use Approx and ContainsSubstring and read the same on both.
#pragma once

#include <string>

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
#else
#include <catch2/catch.hpp>
inline auto ContainsSubstring(const std::string& text) {
  return Catch::Matchers::Contains(text);
}
#endif
