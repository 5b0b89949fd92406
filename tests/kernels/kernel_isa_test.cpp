// Which build of dptrain's CPU kernels runs: the clone this CPU's flags call for, as
// /proc/cpuinfo lists them (the x86-64 levels of the psABI), or the one level a
// -DDPTRAIN_KERNEL_ISA build kept (scripts/check.sh isa).
#include "support/catch.h"

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "kernels/kernel_isa.h"
#include "support/skip.h"

namespace {

std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
  }
  return {};
}

int isa_level_number(const std::string& name) {
  return name == "x86-64-v4" ? 4 : name == "x86-64-v3" ? 3 : 1;
}

int cpuinfo_isa_level() {
  const auto flags = cpuinfo_flags();
  const auto has = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (flags.count(n) == 0) return false;
    }
    return true;
  };
  // x86-64-v3 as the psABI defines it, v2 included (lzcnt is "abm" in /proc/cpuinfo).
  if (!has({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3", "avx", "avx2", "bmi1", "bmi2",
            "f16c", "fma", "abm", "movbe", "xsave"})) {
    return 1;
  }
  return has({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}) ? 4 : 3;
}

}  // namespace

TEST_CASE("the kernels run the clone this CPU's flags call for, or the level a build kept",
          "[kernels]") {
#if !defined(__x86_64__) || !defined(__linux__)
  DPTRAIN_SKIP("the x86-64 levels and /proc/cpuinfo: Linux on x86-64");
#endif
  const auto isa = dptrain::kernels::kernel_isa();
  INFO(isa.level << " (" << isa.chosen << "), /proc/cpuinfo's level " << cpuinfo_isa_level());
  if (isa.chosen == "picked for this CPU") {
    CHECK(isa_level_number(isa.level) == cpuinfo_isa_level());
    CHECK(isa.runs_here);
  } else if (isa.chosen == "kept by DPTRAIN_KERNEL_ISA") {
    CHECK(isa.runs_here == (cpuinfo_isa_level() >= isa_level_number(isa.level)));
  } else {
    CHECK(isa.chosen == "the only one built");  // a compiler without the clones
    CHECK(isa_level_number(isa.level) <= cpuinfo_isa_level());
  }
  if (isa.runs_here) CHECK_NOTHROW(dptrain::kernels::require_kernel_isa());
}
