// parallel.dist_backend: which collective library every rank joins over, decided the same way on
// every rank. The GPU cases need no GPU: the choice is worked out from the config.
#include "support/catch.h"

#include "core/error.h"
#include "parallel/transport_choice.h"

using dptrain::config::DistBackend;
using dptrain::distributed::Transport;
using dptrain::parallel::choose_transport;
using dptrain::parallel::why_not_nccl;

namespace {

const torch::Device kGpu(torch::kCUDA, 0);

}  // namespace

TEST_CASE("NCCL is ruled out by a device list that repeats a GPU or mixes in the CPU",
          "[parallel]") {
  CHECK(why_not_nccl({"cuda:0", "cuda:1"}) == std::nullopt);
  CHECK(why_not_nccl({"auto"}) == std::nullopt);
  // One entry for every rank: under per-rank CUDA_VISIBLE_DEVICES each one's cuda:0 differs.
  CHECK(why_not_nccl({"cuda:0"}) == std::nullopt);
  // CPUs alone: nothing to say about NCCL.
  CHECK(why_not_nccl({"cpu", "cpu"}) == std::nullopt);
  const std::string refuses = ", and NCCL refuses two ranks on one GPU";
  CHECK(why_not_nccl({"cuda:0", "cuda:0"}) == "local ranks 0 and 1 share cuda:0" + refuses);
  CHECK(why_not_nccl({"cuda:0", "cuda:1", "cuda"}) == "local ranks 0 and 2 share cuda:0" + refuses);
  CHECK(why_not_nccl({"cuda:0", "cuda:1", "cuda:1"}) ==
        "local ranks 1 and 2 share cuda:1" + refuses);
  CHECK(why_not_nccl({"cuda:0", "cpu"}) ==
        "local rank 1 trains on cpu, and NCCL reduces only GPU tensors");
  // The whole list counts, not only the entries this machine's ranks use: machines that run
  // fewer ranks than others must come to the same answer.
  CHECK(why_not_nccl({"cuda:0", "cuda:1", "cuda:0"}).has_value());
}

TEST_CASE("auto takes NCCL only where it can serve every rank, and says why", "[parallel]") {
  const auto shared = why_not_nccl({"cuda:0", "cuda:0"});
  const auto picked = choose_transport(DistBackend::kAuto, kGpu, 1, shared, true);
  CHECK(picked.transport == Transport::kGloo);
  CHECK(picked.reason == *shared);
  const auto own = choose_transport(DistBackend::kAuto, kGpu, 1, std::nullopt, true);
  CHECK(own.transport == Transport::kNccl);
  CHECK(own.reason == "each rank has a GPU of its own");
  const auto no_nccl = choose_transport(DistBackend::kAuto, kGpu, 0, std::nullopt, false);
  CHECK(no_nccl.transport == Transport::kGloo);
  CHECK(no_nccl.reason == "this LibTorch has no NCCL");
  const auto cpu = choose_transport(DistBackend::kAuto, torch::kCPU, 0, std::nullopt, true);
  CHECK(cpu.transport == Transport::kGloo);
  CHECK(cpu.reason == "the ranks train on the CPU");
  // A GPU rank beside a CPU one: the reason names the CPU rank, on every rank alike.
  const auto mixed = why_not_nccl({"cpu", "cuda:0"});
  CHECK(choose_transport(DistBackend::kAuto, kGpu, 1, mixed, true).reason == *mixed);
  // A transport the config names is taken as it is, with no reason to log.
  const auto gloo = choose_transport(DistBackend::kGloo, kGpu, 0, std::nullopt, true);
  CHECK(gloo.transport == Transport::kGloo);
  CHECK(gloo.reason.empty());
  CHECK(choose_transport(DistBackend::kNccl, kGpu, 0, shared, true).transport == Transport::kNccl);
}

TEST_CASE("nccl named for a CPU rank is a config error naming the rank", "[parallel]") {
  try {
    choose_transport(DistBackend::kNccl, torch::kCPU, 1, std::nullopt, true);
    FAIL("no error");
  } catch (const dptrain::core::Error& e) {
    CHECK(e.code() == dptrain::core::ErrorCode::kConfig);
    CHECK(std::string(e.what()) ==
          "parallel.dist_backend: rank 1 trains on cpu, and NCCL reduces only GPU tensors");
  }
}
