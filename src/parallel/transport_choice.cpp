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

std::optional<std::string> why_not_nccl(const std::vector<std::string>& specs,
                                        int local_world_size) {
  if (specs.size() == 1) {
    // One entry for every rank: "auto" gives each its own GPU, anything else is one device for all.
    if (specs[0] == "auto" || local_world_size < 2) return std::nullopt;
    const std::optional<int> gpu = gpu_of(specs[0]);
    return gpu ? std::optional(shared(0, 1, *gpu)) : std::nullopt;
  }
  const int listed = std::min(static_cast<int>(specs.size()), local_world_size);
  for (int rank = 0; rank < listed; ++rank) {
    const std::optional<int> gpu = gpu_of(specs[static_cast<size_t>(rank)]);
    if (!gpu) {
      return "local rank " + std::to_string(rank) + " trains on " +
             specs[static_cast<size_t>(rank)] + ", and NCCL reduces only GPU tensors";
    }
    for (int earlier = 0; earlier < rank; ++earlier) {
      if (gpu_of(specs[static_cast<size_t>(earlier)]) == gpu) return shared(earlier, rank, *gpu);
    }
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
    if (obstacle) {
      throw core::Error(core::ErrorCode::kConfig, "parallel.dist_backend \"nccl\": " + *obstacle,
                        "use \"gloo\" (or \"auto\", which picks it here), or give each rank a "
                        "GPU of its own in parallel.devices");
    }
    return {Transport::kNccl, ""};
  }
  if (!device.is_cuda()) return {Transport::kGloo, "the ranks train on the CPU"};
  if (!nccl_built) return {Transport::kGloo, "this LibTorch has no NCCL"};
  if (obstacle) return {Transport::kGloo, *obstacle};
  return {Transport::kNccl, "each rank has a GPU of its own"};
}

}  // namespace dptrain::parallel
