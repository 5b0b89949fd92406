// Which collective library a ddp rank joins over (parallel.dist_backend), and why. Every rank of a
// job must come to the same answer (a mix of NCCL and Gloo ranks never connects), so it is worked
// out from the config and the number of ranks per machine, never from one rank's own device alone.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "distributed/communicator.h"

namespace dptrain::parallel {

// Why NCCL cannot serve the `local_world_size` ranks of a machine under `specs`
// (parallel.devices), or nothing: it reduces only GPU tensors and refuses two ranks on one GPU.
// ["cuda:0","cuda:0"] and a single "cuda:0" for several ranks share one GPU; ["auto"] gives each
// rank its own.
std::optional<std::string> why_not_nccl(const std::vector<std::string>& specs,
                                        int local_world_size);

struct TransportChoice {
  distributed::Transport transport = distributed::Transport::kGloo;
  std::string reason;  // why `auto` chose as it did; empty for a transport the config names
};

// `choice` for rank `rank`, training on `device`; `obstacle`: why_not_nccl's answer. Where there is
// one, `auto` takes Gloo and an explicit "nccl" is a config error that names it. `nccl_built`:
// whether this LibTorch has NCCL.
TransportChoice choose_transport(config::DistBackend choice, torch::Device device, int rank,
                                 const std::optional<std::string>& obstacle, bool nccl_built);

}  // namespace dptrain::parallel
