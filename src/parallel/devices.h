// Device names from the config turned into torch devices that exist on this machine.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace dptrain::parallel {

// "auto" -> cuda:0 when LibTorch sees a GPU, else cpu; "cpu"; "cuda" (= cuda:0); "cuda:N".
// Throws a device error naming `key` when the device is not there.
torch::Device resolve_device(const std::string& spec, const std::string& key);

// Waits for the device's queued work, so that a timer read afterwards measures it.
void synchronize(const torch::Device& device);

// "[cpu]", "[cuda:0, cuda:1]": d2l's way of listing devices.
std::string format_devices(const std::vector<torch::Device>& devices);

}  // namespace dptrain::parallel
