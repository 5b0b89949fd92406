// Which collective library a ddp rank joins over (parallel.dist_backend), and why. Every rank of a
// job must come to the same answer (a mix of NCCL and Gloo ranks never connects), so what rules
// NCCL out is read from parallel.devices as a whole, the same list on every machine, and not from
// how many ranks a machine runs (which may differ between machines under SLURM or mpirun).
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "distributed/communicator.h"

namespace dptrain::parallel {

// Why NCCL cannot serve ranks placed by `specs` (parallel.devices, one entry per local rank), or
// nothing: it reduces only GPU tensors and refuses two ranks on one GPU. A list that names a GPU
// and also the CPU, or one GPU twice (["cuda:0","cuda:0"]), rules it out. A single entry does
// not: under per-rank CUDA_VISIBLE_DEVICES (SLURM's --gpus-per-task) every rank's "cuda:0" is a
// GPU of its own. Nor does a list of CPUs alone, which needs no saying.
std::optional<std::string> why_not_nccl(const std::vector<std::string>& specs);

struct TransportChoice {
  distributed::Transport transport = distributed::Transport::kGloo;
  std::string reason;  // why `auto` chose as it did; empty for a transport the config names
};

// `choice` for rank `rank`, training on `device`; `obstacle`: why_not_nccl's answer. Where there is
// one, `auto` takes Gloo; an explicit "nccl" is kept (the caller warns: the GPUs may still differ
// under per-rank CUDA_VISIBLE_DEVICES). `nccl_built`: whether this LibTorch has NCCL.
TransportChoice choose_transport(config::DistBackend choice, torch::Device device, int rank,
                                 const std::optional<std::string>& obstacle, bool nccl_built);

}  // namespace dptrain::parallel
