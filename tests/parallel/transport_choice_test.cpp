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

TEST_CASE("NCCL is ruled out where local ranks share a GPU or train on the CPU", "[parallel]") {
  CHECK(why_not_nccl({"cuda:0", "cuda:1"}, 2) == std::nullopt);
  CHECK(why_not_nccl({"auto"}, 8) == std::nullopt);
  CHECK(why_not_nccl({"cuda:0"}, 1) == std::nullopt);
  // Only the ranks that run count: a longer list for fewer ranks shares nothing in use.
  CHECK(why_not_nccl({"cuda:0", "cuda:1", "cuda:0"}, 2) == std::nullopt);
  const std::string refuses = ", and NCCL refuses two ranks on one GPU";
  CHECK(why_not_nccl({"cuda:0", "cuda:0"}, 2) == "local ranks 0 and 1 share cuda:0" + refuses);
  CHECK(why_not_nccl({"cuda:0", "cuda:1", "cuda"}, 3) ==
        "local ranks 0 and 2 share cuda:0" + refuses);
  CHECK(why_not_nccl({"cuda:0", "cuda:1", "cuda:1"}, 3) ==
        "local ranks 1 and 2 share cuda:1" + refuses);
  CHECK(why_not_nccl({"cuda:1"}, 2) == "local ranks 0 and 1 share cuda:1" + refuses);
  CHECK(why_not_nccl({"cuda:0", "cpu"}, 2) ==
        "local rank 1 trains on cpu, and NCCL reduces only GPU tensors");
}

TEST_CASE("auto takes NCCL only where it can serve every rank, and says why", "[parallel]") {
  const auto shared = why_not_nccl({"cuda:0", "cuda:0"}, 2);
  const auto picked = choose_transport(DistBackend::kAuto, kGpu, 1, shared, true);
  CHECK(picked.transport == Transport::kGloo);
  CHECK(picked.reason == *shared);
  const auto own = choose_transport(DistBackend::kAuto, kGpu, 1, std::nullopt, true);
  CHECK(own.transport == Transport::kNccl);
  CHECK(own.reason == "each rank has a GPU of its own");
  const auto no_nccl = choose_transport(DistBackend::kAuto, kGpu, 0, std::nullopt, false);
  CHECK(no_nccl.transport == Transport::kGloo);
  CHECK(no_nccl.reason == "this LibTorch has no NCCL");
  CHECK(choose_transport(DistBackend::kAuto, torch::kCPU, 0, std::nullopt, true).transport ==
        Transport::kGloo);
  // A transport the config names is taken as it is, with no reason to log.
  const auto gloo = choose_transport(DistBackend::kGloo, kGpu, 0, std::nullopt, true);
  CHECK(gloo.transport == Transport::kGloo);
  CHECK(gloo.reason.empty());
}

TEST_CASE("nccl named for ranks that share a GPU is a config error naming them", "[parallel]") {
  try {
    choose_transport(DistBackend::kNccl, kGpu, 1, why_not_nccl({"cuda:0", "cuda:0"}, 2), true);
    FAIL("no error");
  } catch (const dptrain::core::Error& e) {
    CHECK(e.code() == dptrain::core::ErrorCode::kConfig);
    CHECK(std::string(e.what()) ==
          "parallel.dist_backend \"nccl\": local ranks 0 and 1 share cuda:0, and NCCL refuses two "
          "ranks on one GPU");
    CHECK_THAT(e.hint(), ContainsSubstring("use \"gloo\""));
  }
  CHECK_THROWS_AS(choose_transport(DistBackend::kNccl, torch::kCPU, 0, std::nullopt, true),
                  dptrain::core::Error);
}
