// ZeRO's NCCL path, for when a GPU is lent: stage 2 reduce-scatters the gradients into each
// rank's shard and all-gathers the parameters into the flat buffer (stage 1 all-reduces as stage
// 0 does). One rank per GPU; with one GPU, a world of one still runs both collectives.
#include "support/catch.h"
#include "support/models.h"
#include "support/rank_threads.h"
#include "support/runs.h"
#include "support/skip.h"

#include "parallel/ddp.h"
#include "parallel/zero_optimizer.h"
#include "train/step.h"

namespace {

using dptrain::parallel::DistributedDataParallel;
using dptrain::train::Session;

constexpr int64_t kZeroCudaSteps = 6;

// kZeroCudaSteps Adam steps of 64 samples per rank at `stage`; every rank's parameters after each
// step.
std::vector<std::vector<torch::Tensor>> train_on_gpus(int world, int stage) {
  auto g = at::detail::createCPUGenerator(/*seed_val=*/5);
  const torch::Tensor images = torch::rand({kZeroCudaSteps * 64 * world, 1, 28, 28}, g);
  const torch::Tensor labels = torch::randint(0, 10, {images.size(0)}, g, torch::kInt64);
  std::vector<torch::Device> gpus;
  for (int r = 0; r < world; ++r) gpus.emplace_back(torch::kCUDA, r);
  std::vector<std::vector<torch::Tensor>> after(static_cast<size_t>(world));
  dptrain::testing::run_ranks(
      world,
      [&](int rank, std::unique_ptr<dptrain::distributed::Communicator>& comm) {
        const torch::Device gpu = gpus[static_cast<size_t>(rank)];
        Session s;
        s.backend = std::make_unique<DistributedDataParallel>(dptrain::testing::float32_lenet(),
                                                              gpu, std::move(comm),
                                                              /*bucket_bytes=*/100'000, stage);
        s.optimizer = s.backend->make_optimizer([](std::vector<torch::Tensor> params) {
          return std::make_unique<torch::optim::Adam>(std::move(params),
                                                      torch::optim::AdamOptions(1e-3));
        });
        for (int64_t step = 0; step < kZeroCudaSteps; ++step) {
          const int64_t first = (step * world + rank) * 64;
          dptrain::train::accumulate_micro_batch(s, images.narrow(0, first, 64).to(gpu),
                                                 labels.narrow(0, first, 64).to(gpu), 0, 1);
          dptrain::train::take_optimizer_step(s, s.backend->optimizer_parameters(), 1e-3);
          std::vector<torch::Tensor> flat;
          for (const auto& p : s.backend->parameters()) flat.push_back(p.detach().cpu().flatten());
          after[static_cast<size_t>(rank)].push_back(torch::cat(flat));
        }
      },
      dptrain::distributed::Transport::kNccl, gpus);
  return after;
}

}  // namespace

TEST_CASE("ZeRO over NCCL: reduce-scatter and all-gather take stage 0's steps, one rank a GPU",
          "[parallel][zero][cuda]") {
  SKIP_WITHOUT_CUDA();
  if (!dptrain::distributed::nccl_available())
    DPTRAIN_SKIP("[cuda] skipped: this LibTorch has no NCCL");
  const int world = std::min<int>(4, static_cast<int>(torch::cuda::device_count()));
  const auto stage0 = train_on_gpus(world, 0);
  for (const int stage : {1, 2}) {
    INFO(world << " GPUs, stage " << stage);
    const auto sharded = train_on_gpus(world, stage);
    for (int64_t step = 0; step < kZeroCudaSteps; ++step) {
      INFO("after step " << step + 1);
      // The all-gather gives every rank the same bytes.
      for (const auto& rank : sharded) CHECK(torch::equal(rank[step], sharded[0][step]));
      // A reduce-scatter may sum in another order than an all-reduce, and cuDNN's backward is
      // not bit-reproducible: close, not equal.
      CHECK(dptrain::testing::max_relative_difference({sharded[0][step]}, {stage0[0][step]}) <=
            1e-5);
    }
  }
}
