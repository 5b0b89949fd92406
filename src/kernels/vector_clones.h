// DPTRAIN_VECTOR_CLONES before a function with hot loops of our own compiles it for AVX-512,
// AVX2+FMA and the x86-64 baseline, and the loader picks the best the CPU has: one binary for
// every x86-64 machine, vector code where the CPU allows it. Elsewhere, under GCC before 12 (which
// does not know the x86-64 levels here) and clang before 18 (which cannot dispatch them: LLVM
// issue 55830), it is nothing, and the loops are the baseline's. The clones contract a * b + c into
// one FMA where the CPU has it, so results are the same at any thread count but may differ in the
// last bits between CPUs, as oneDNN's do.
//
// A build configured with -DDPTRAIN_KERNEL_ISA=x86-64-v4|x86-64-v3|baseline keeps that one clone
// alone (DPTRAIN_KERNEL_ISA_LEVEL 4, 3 or 1), so that the suite can run each path a user's CPU
// may take on one machine (scripts/check.sh isa); kernels/kernel_isa.h says which one runs.
#pragma once

#if defined(DPTRAIN_KERNEL_ISA_LEVEL)
#if DPTRAIN_KERNEL_ISA_LEVEL == 4
#define DPTRAIN_VECTOR_CLONES __attribute__((target("arch=x86-64-v4")))
#elif DPTRAIN_KERNEL_ISA_LEVEL == 3
#define DPTRAIN_VECTOR_CLONES __attribute__((target("arch=x86-64-v3")))
#else
#define DPTRAIN_VECTOR_CLONES
#endif
#elif defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 18) || \
                              (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#define DPTRAIN_VECTOR_CLONES_DISPATCHED 1
#define DPTRAIN_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DPTRAIN_VECTOR_CLONES
#endif
