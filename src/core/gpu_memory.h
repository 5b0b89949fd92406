// How much GPU memory LibTorch's caching allocator has handed out at most, for metrics.jsonl's
// peak_gpu_bytes. The only CUDA-specific call outside NCCL's setup, kept here so that the rest
// builds without CUDA's headers (Debian's CPU LibTorch).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace dptrain::core {

// The peak of the bytes allocated on each distinct GPU among `devices` since the process began,
// summed; 0 for CPUs and in builds without CUDA.
int64_t peak_gpu_bytes(const std::vector<torch::Device>& devices);

}  // namespace dptrain::core
