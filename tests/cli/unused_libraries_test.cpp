// dptrain's programs map empty stand-ins for the OpenCV and FFmpeg libraries Debian's LibTorch
// names but never uses (cmake/unused_torch_libraries.cmake says why), never the real ones, start
// with every symbol of every library bound, and take no library from the folder they start in.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

const std::string kStandInDir = DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR;

std::vector<std::string> stand_in_sonames() {
  std::istringstream listed(DPTRAIN_UNUSED_TORCH_LIBRARIES);
  std::vector<std::string> sonames;
  for (std::string soname; listed >> soname;) sonames.push_back(soname);
  return sonames;
}

// The lines of `text` that hold `part`.
std::vector<std::string> lines_holding(const std::string& text, const std::string& part) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find(part) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// The loader's list of what dptrain loads ("soname => path (address)"), started in `cwd`.
std::string loader_list(const std::filesystem::path& cwd = {}) {
  const auto listed = run_dptrain("", cwd, {"LD_TRACE_LOADED_OBJECTS=1"});
  INFO(listed.err);
  REQUIRE(listed.status == 0);
  return listed.out;
}

// The stand-ins' sonames; fails where configure could not check whether LibTorch uses the
// libraries.
std::vector<std::string> stand_ins_made() {
  const std::string unchecked = DPTRAIN_UNUSED_TORCH_LIBRARIES_UNCHECKED;
  const std::string hint =
      "configure with -DDPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES=OFF if that is meant";
  if (!unchecked.empty()) {
    FAIL("LibTorch's unused libraries stay loaded, unchecked: " << unchecked << " (" << hint
                                                                << ")");
  }
  return stand_in_sonames();
}

}  // namespace

TEST_CASE(
    "dptrain and the test suite map the stand-ins of the libraries LibTorch never uses, not "
    "the real ones, and start with every symbol bound",
    "[cli]") {
  const std::vector<std::string> sonames = stand_ins_made();
  if (sonames.empty())
    DPTRAIN_SKIP(std::string("no stand-ins: ") + DPTRAIN_UNUSED_TORCH_LIBRARIES_NONE);
  // The loader's own account (it maps, runs nothing): each soname resolves to its stand-in.
  const std::string listed = loader_list();
  for (const std::string& soname : sonames) {
    INFO(soname << "\n" << listed);
    const auto lines = lines_holding(listed, soname);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("=> " + kStandInDir + "/" + soname + " ") != std::string::npos);
  }
  CHECK(lines_holding(listed, "libgdal").empty());  // what the real OpenCV would bring
  // With every symbol bound before main(), one that only a real library defined would stop it.
  const auto bound = run_dptrain("--version", {}, {"LD_BIND_NOW=1"});
  INFO(bound.err);
  CHECK(bound.status == 0);
  CHECK(bound.out.rfind("dptrain ", 0) == 0);
  // This test binary links LibTorch the same way: each stand-in is mapped, and no file of the
  // real library (its name is the soname's stem and a longer version: libopencv_core.so.4.6.0).
  std::ifstream maps("/proc/self/maps");
  std::stringstream mapped;
  mapped << maps.rdbuf();
  for (const std::string& soname : sonames) {
    INFO(soname);
    CHECK_FALSE(lines_holding(mapped.str(), kStandInDir + "/" + soname).empty());
    const std::string stem = "/" + soname.substr(0, soname.find(".so") + 3);
    for (const std::string& line : lines_holding(mapped.str(), stem)) {
      CHECK(line.find(kStandInDir + "/") != std::string::npos);
    }
  }
}

TEST_CASE("dptrain takes no library from the folder it starts in", "[cli][security]") {
  // A copy of a library dptrain needs, under its soname, in the folder it starts in: an empty
  // entry in the program's search path (CMake pads its own with them) would make the loader take
  // it, before the system's.
  const std::string listed = loader_list();
  const auto zlib = lines_holding(listed, "libz.so.1 => ");
  REQUIRE(zlib.size() == 1);
  const std::string system_copy =
      zlib[0].substr(zlib[0].find("=> ") + 3, zlib[0].find(" (") - zlib[0].find("=> ") - 3);
  TempDir cwd;
  std::filesystem::copy_file(system_copy, cwd / "libz.so.1");
  const std::string listed_there = loader_list(cwd.path());
  INFO(listed_there);
  const auto planted = lines_holding(listed_there, "libz.so.1");
  REQUIRE(planted.size() == 1);
  CHECK(planted[0].find("=> " + system_copy + " ") != std::string::npos);
}
