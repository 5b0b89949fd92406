// DPTRAIN_VECTOR_CLONES before a function with hot loops of our own compiles it for AVX-512,
// AVX2+FMA and the x86-64 baseline, and the loader picks the best the CPU has: one binary for
// every x86-64 machine, vector code where the CPU allows it. Elsewhere it is nothing.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define DPTRAIN_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DPTRAIN_VECTOR_CLONES
#endif
