// dptrain's programs map empty stand-ins for the OpenCV and FFmpeg libraries Debian's LibTorch
// names but never uses (cmake/unused_torch_libraries.cmake says why), never the real ones, and
// start with every symbol of every library bound.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

std::vector<std::string> stand_in_sonames() {
  std::istringstream listed(DPTRAIN_UNUSED_TORCH_LIBRARIES);
  std::vector<std::string> sonames;
  for (std::string soname; listed >> soname;) sonames.push_back(soname);
  return sonames;
}

// The lines of the loader's list (`soname => path (address)`) that name `soname`.
std::vector<std::string> lines_naming(const std::string& listing, const std::string& soname) {
  std::istringstream in(listing);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find(soname) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

}  // namespace

TEST_CASE(
    "dptrain and the test suite map the stand-ins of the libraries LibTorch never uses, not "
    "the real ones, and start with every symbol bound",
    "[cli]") {
  const std::vector<std::string> sonames = stand_in_sonames();
  if (sonames.empty()) {
    DPTRAIN_SKIP(
        "this LibTorch names no OpenCV or FFmpeg library it does not use, or the build was "
        "configured with -DDPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES=OFF");
  }
  const std::string dir = DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR;
  // The loader's own account (it maps, runs nothing): each soname resolves to its stand-in.
  const auto listed = run_dptrain("", {}, {"LD_TRACE_LOADED_OBJECTS=1"});
  REQUIRE(listed.status == 0);
  for (const std::string& soname : sonames) {
    INFO(soname << "\n" << listed.out);
    const auto lines = lines_naming(listed.out, soname);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("=> " + dir + "/" + soname + " ") != std::string::npos);
  }
  CHECK(lines_naming(listed.out, "libgdal").empty());  // what the real OpenCV would bring
  // With every symbol bound before main(), one that only a real library defined would stop it.
  const auto bound = run_dptrain("--version", {}, {"LD_BIND_NOW=1"});
  INFO(bound.err);
  CHECK(bound.status == 0);
  CHECK(bound.out.rfind("dptrain ", 0) == 0);
  // This test binary links LibTorch the same way.
  std::ifstream maps("/proc/self/maps");
  std::stringstream mapped;
  mapped << maps.rdbuf();
  for (const std::string& soname : sonames) {
    INFO(soname);
    for (const std::string& line : lines_naming(mapped.str(), soname)) {
      CHECK(line.find(dir + "/" + soname) != std::string::npos);
    }
  }
  CHECK(lines_naming(mapped.str(), "libgdal").empty());
}
