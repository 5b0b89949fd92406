#include "core/heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <sys/resource.h>

namespace dptrain::core {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit machines; fixing it also stops
  // glibc's own adjustment, which would lower the trim threshold again.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

int64_t peak_resident_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

}  // namespace dptrain::core
