// Device names from the config turned into torch devices that exist on this machine.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace dptrain::parallel {

// "auto" -> cuda:0 when LibTorch sees a GPU, else cpu; "cpu"; "cuda" (= cuda:0); "cuda:N".
// Throws a device error naming `key` when the device is not there.
torch::Device resolve_device(const std::string& spec, const std::string& key);

// dp's devices, one per entry (repeats allowed), or for "auto" alone every GPU (the CPU where there
// is none). Throws a device error naming the entry that is not there.
std::vector<torch::Device> resolve_device_list(const std::vector<std::string>& specs);

// How many ranks ddp starts on this machine for `specs`: one per entry, or for "auto" alone one per
// GPU (one CPU rank where there is no GPU).
int local_rank_count(const std::vector<std::string>& specs);

// The device of the rank with this local rank: its own entry of `specs`, or the only entry for
// every rank ("auto": cuda:<local rank> where there are GPUs, else the CPU). Throws a device error
// naming the rank when it has none or the device is not there.
torch::Device device_for_local_rank(const std::vector<std::string>& specs, int local_rank,
                                    int rank);

// Waits for the device's queued work, so that a timer read afterwards measures it.
void synchronize(const torch::Device& device);

// "[cpu]", "[cuda:0, cuda:1]": d2l's way of listing devices.
std::string format_devices(const std::vector<torch::Device>& devices);

}  // namespace dptrain::parallel
