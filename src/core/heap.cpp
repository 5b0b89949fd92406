#include "core/heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dptrain::core {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit machines; fixing it also stops
  // glibc's own adjustment, which would lower the trim threshold again.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace dptrain::core
