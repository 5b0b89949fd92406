#include "parallel/devices.h"

#include "core/error.h"

namespace dptrain::parallel {

torch::Device resolve_device(const std::string& spec, const std::string& key) {
  const bool have_cuda = torch::cuda::is_available();
  if (spec == "auto")
    return have_cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(spec);
  } catch (const c10::Error&) {
    throw core::Error(core::ErrorCode::kDevice, key + ": \"" + spec + "\" is not a device",
                      "use \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"");
  }
  if (device.is_cpu()) return device;
  if (!device.is_cuda()) {
    throw core::Error(core::ErrorCode::kDevice, key + ": \"" + spec + "\" is not supported",
                      "use \"cpu\" or \"cuda:N\"");
  }
  if (!have_cuda) {
    throw core::Error(core::ErrorCode::kDevice,
                      key + ": \"" + spec + "\" asks for a GPU, but this LibTorch sees none",
                      "use \"cpu\" or \"auto\" (several devices: repeat one, as in "
                      "--set parallel.devices='[\"cpu\",\"cpu\"]'), or build against a CUDA "
                      "LibTorch (dptrain info tells what this build has)");
  }
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  const int64_t index = device.has_index() ? device.index() : 0;
  if (index >= count) {
    throw core::Error(core::ErrorCode::kDevice,
                      key + ": \"" + spec + "\" does not exist; this machine has " +
                          std::to_string(count) + " GPU(s)",
                      "use cuda:0 to cuda:" + std::to_string(count - 1) +
                          "; to try a config for more GPUs on this machine, repeat a device, as "
                          "in --set parallel.devices='[\"cuda:0\",\"cuda:0\"]'");
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::vector<torch::Device> resolve_device_list(const std::vector<std::string>& specs) {
  std::vector<torch::Device> devices;
  if (specs.size() == 1 && specs[0] == "auto") {
    if (!torch::cuda::is_available()) return {torch::Device(torch::kCPU)};
    for (size_t i = 0; i < torch::cuda::device_count(); ++i) {
      devices.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(i));
    }
    return devices;
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    devices.push_back(resolve_device(specs[i], "parallel.devices[" + std::to_string(i) + "]"));
  }
  return devices;
}

int local_rank_count(const std::vector<std::string>& specs) {
  if (specs.size() == 1 && specs[0] == "auto") {
    return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 1;
  }
  return static_cast<int>(specs.size());
}

torch::Device device_for_local_rank(const std::vector<std::string>& specs, int local_rank,
                                    int rank) {
  const std::string who =
      "rank " + std::to_string(rank) + " (local rank " + std::to_string(local_rank) + ")";
  if (specs.size() == 1) {
    if (specs[0] == "auto") {
      if (!torch::cuda::is_available()) return torch::Device(torch::kCPU);
      return resolve_device("cuda:" + std::to_string(local_rank), who + ": parallel.devices auto");
    }
    return resolve_device(specs[0], who + ": parallel.devices[0]");
  }
  if (local_rank >= static_cast<int>(specs.size())) {
    throw core::Error(
        core::ErrorCode::kDevice,
        who + " has no device: parallel.devices lists " + std::to_string(specs.size()),
        "list one device per process on a node, or a single entry for all");
  }
  return resolve_device(specs[static_cast<size_t>(local_rank)],
                        who + ": parallel.devices[" + std::to_string(local_rank) + "]");
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

std::string format_devices(const std::vector<torch::Device>& devices) {
  std::string out = "[";
  for (size_t i = 0; i < devices.size(); ++i) out += (i ? ", " : "") + devices[i].str();
  return out + "]";
}

}  // namespace dptrain::parallel
