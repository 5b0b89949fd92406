// How the C library's heap treats memory that training frees, and how much the process holds. A
// step allocates and frees the same large tensors again and again; by default glibc hands much of
// that memory back to the kernel after each free (above all from the heaps of threads other than
// the main one), and the next step faults every page in again.
#pragma once

#include <cstdint>

namespace dptrain::core {

// Keeps freed memory for reuse: allocations up to 32 MiB come from the heap (not one mmap each),
// and a heap gives memory back only once 256 MiB lie free at its top. Measured on 2 CPU cores,
// dp over ["cpu", "cpu"] spent about a fifth of its time in page faults without this. Call once,
// before any thread starts; a no-op where the C library is not glibc.
void keep_freed_memory_for_reuse();

// The process's peak resident memory so far, in bytes (getrusage's ru_maxrss).
int64_t peak_resident_bytes();

}  // namespace dptrain::core
