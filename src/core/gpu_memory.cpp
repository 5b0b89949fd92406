#include "core/gpu_memory.h"

#include <set>

#include "build_features.h"

#if DPTRAIN_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace dptrain::core {

int64_t peak_gpu_bytes(const std::vector<torch::Device>& devices) {
  std::set<c10::DeviceIndex> gpus;
  for (const torch::Device& d : devices) {
    if (d.is_cuda()) gpus.insert(d.has_index() ? d.index() : 0);
  }
  int64_t total = 0;
#if DPTRAIN_WITH_CUDA
  for (const c10::DeviceIndex gpu : gpus) {
    // Index 0 of the stat arrays is StatType::AGGREGATE (both pools) in every LibTorch 2.x,
    // whose namespace for it has moved between releases.
    total += c10::cuda::CUDACachingAllocator::getDeviceStats(gpu).allocated_bytes[0].peak;
  }
#endif
  return total;
}

}  // namespace dptrain::core
