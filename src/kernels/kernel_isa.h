// Which instruction-set build of dptrain's own CPU kernels runs here (kernels/vector_clones.h):
// the clone the loader picks for this CPU, or the one level a -DDPTRAIN_KERNEL_ISA build kept.
// `dptrain info` prints it and scripts/check.sh isa reads it back, so that a run down one path
// is known to have taken it; a kept level this CPU lacks is refused before any kernel runs.
#pragma once

#include <string>

namespace dptrain::kernels {

struct KernelIsa {
  std::string level;   // "x86-64-v4", "x86-64-v3" or "baseline"
  std::string chosen;  // "picked for this CPU", "kept by DPTRAIN_KERNEL_ISA", "the only one built"
  bool runs_here = true;  // false: a kept level above this CPU's
};

KernelIsa kernel_isa();

// Throws core::Error naming the level and the CPU where a kept level cannot run here: its code
// would stop the process with SIGILL at the first kernel.
void require_kernel_isa();

}  // namespace dptrain::kernels
