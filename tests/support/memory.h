// Running a piece of a test under a memory ceiling: a reader handed a hostile file must refuse it
// without first allocating what the file claims. The piece runs in a forked child whose address
// space may grow by at most `limit_mb` beyond what it holds at the fork; an allocation past that
// fails there (std::bad_alloc) instead of swapping the machine.
#pragma once

#include <functional>
#include <string>

namespace dptrain::testing {

// How the piece ended: "returned", "threw: <message>", "out of memory", or "crashed".
// Under AddressSanitizer (which reserves terabytes of address space) it runs in this process
// without a ceiling: the outcome is still checked, the bound only where it can be.
std::string run_within_memory(const std::function<void()>& piece, long limit_mb);

// Whether run_within_memory enforces its ceiling in this build (not under AddressSanitizer).
bool memory_ceiling_enforced();

// The same for memory actually touched, where the address space is not the measure (a mapped
// file costs only the pages read): the piece runs in a forked child, and its outcome becomes
// "used N MB" when its resident peak (VmHWM, reset first) rose more than `limit_mb` above where it
// began.
std::string run_within_resident_memory(const std::function<void()>& piece, long limit_mb);

// The same under a ceiling of CPU time instead, for work whose cost must grow with its input, not
// its square: the piece runs in a forked child limited to `seconds` of CPU, many times what it
// needs, and one that passes them is killed ("crashed"). A bound on complexity, not a timing.
std::string run_within_cpu_time(const std::function<void()>& piece, long seconds);

}  // namespace dptrain::testing
