#include "parallel/transport_choice.h"

#include "core/error.h"

namespace dptrain::parallel {
namespace {

// The GPU an entry of parallel.devices names ("cuda" and a listed "auto" mean cuda:0), or nothing
// for a CPU entry or one that is no device name (resolving the devices reports that).
std::optional<int> gpu_of(const std::string& spec) {
  if (spec == "auto" || spec == "cuda") return 0;
  try {
    const torch::Device device(spec);
    if (device.is_cuda()) return device.has_index() ? device.index() : 0;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string shared(int first, int second, int gpu) {
  return "local ranks " + std::to_string(first) + " and " + std::to_string(second) +
         " share cuda:" + std::to_string(gpu) + ", and NCCL refuses two ranks on one GPU";
}

}  // namespace

std::optional<std::string> why_not_nccl(const std::vector<std::string>& specs) {
  if (specs.size() < 2) return std::nullopt;
  std::optional<size_t> cpu;
  bool any_gpu = false;
  for (size_t rank = 0; rank < specs.size(); ++rank) {
    const std::optional<int> gpu = gpu_of(specs[rank]);
    if (!gpu) {
      if (!cpu) cpu = rank;
      continue;
    }
    any_gpu = true;
    for (size_t earlier = 0; earlier < rank; ++earlier) {
      if (gpu_of(specs[earlier]) == gpu) {
        return shared(static_cast<int>(earlier), static_cast<int>(rank), *gpu);
      }
    }
  }
  if (cpu && any_gpu) {
    return "local rank " + std::to_string(*cpu) + " trains on " + specs[*cpu] +
           ", and NCCL reduces only GPU tensors";
  }
  return std::nullopt;
}

TransportChoice choose_transport(config::DistBackend choice, torch::Device device, int rank,
                                 const std::optional<std::string>& obstacle, bool nccl_built) {
  using distributed::Transport;
  if (choice == config::DistBackend::kGloo) return {Transport::kGloo, ""};
  if (choice == config::DistBackend::kNccl) {
    if (!device.is_cuda()) {
      throw core::Error(core::ErrorCode::kConfig,
                        "parallel.dist_backend: rank " + std::to_string(rank) + " trains on " +
                            device.str() + ", and NCCL reduces only GPU tensors",
                        "use \"gloo\" (or \"auto\") for CPU ranks");
    }
    return {Transport::kNccl, ""};
  }
  if (obstacle) return {Transport::kGloo, *obstacle};
  if (!device.is_cuda()) return {Transport::kGloo, "the ranks train on the CPU"};
  if (!nccl_built) return {Transport::kGloo, "this LibTorch has no NCCL"};
  return {Transport::kNccl, "each rank has a GPU of its own"};
}

}  // namespace dptrain::parallel
