#include "kernels/kernel_isa.h"

#include "core/error.h"
#include "kernels/vector_clones.h"

namespace dptrain::kernels {
namespace {

// The x86-64 levels as the CPU reports them, in the dispatcher's own terms where the compiler
// knows them (GCC 12 on: what target_clones' resolver asks), else feature by feature.
int cpu_level() {
#if defined(__x86_64__)
  __builtin_cpu_init();
#if !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12
  if (__builtin_cpu_supports("x86-64-v4")) return 4;
  if (__builtin_cpu_supports("x86-64-v3")) return 3;
#else
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
                  __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("sse4.2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  if (v4) return 4;
  if (v3) return 3;
#endif
#endif
  return 1;
}

// Without clones the kernels are compiled once, for whatever -march the build gave.
constexpr int compiled_level() {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
  return 4;
#elif defined(__AVX2__) && defined(__FMA__)
  return 3;
#else
  return 1;
#endif
}

std::string level_name(int level) {
  return level == 4 ? "x86-64-v4" : level == 3 ? "x86-64-v3" : "baseline";
}

}  // namespace

KernelIsa kernel_isa() {
#if defined(DPTRAIN_KERNEL_ISA_LEVEL)
  // The baseline kept is whatever -march the build gave (vector_clones.h adds nothing to it).
  constexpr int kept = DPTRAIN_KERNEL_ISA_LEVEL == 1 ? compiled_level() : DPTRAIN_KERNEL_ISA_LEVEL;
  return {level_name(kept), "kept by DPTRAIN_KERNEL_ISA", cpu_level() >= kept};
#elif defined(DPTRAIN_VECTOR_CLONES_DISPATCHED)
  return {level_name(cpu_level()), "picked for this CPU", true};
#else
  return {level_name(compiled_level()), "the only one built", true};
#endif
}

void require_kernel_isa() {
  const KernelIsa isa = kernel_isa();
  if (isa.runs_here) return;
  throw core::Error(core::ErrorCode::kDevice,
                    "this build keeps dptrain's CPU kernels at " + isa.level +
                        " alone (DPTRAIN_KERNEL_ISA), which this CPU lacks (" +
                        level_name(cpu_level()) + ")",
                    "rebuild without -DDPTRAIN_KERNEL_ISA, or with a level this CPU has");
}

}  // namespace dptrain::kernels
