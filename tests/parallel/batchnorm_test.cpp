// BatchNorm on each backend, as the PyTorch wrappers define it (src/parallel/buffers.h):
// SyncBatchNorm on W ddp ranks takes one device's steps on the whole batch, buffers included; dp
// keeps the first replica's statistics; ddp without it broadcasts rank 0's buffers and each rank
// normalises its own shard, which is dp's arithmetic on the same chunks. Float64, so that what is
// left between two ways of training is theirs, not float32 rounding.
#include "support/catch.h"
#include "support/models.h"
#include "support/rank_threads.h"

#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/single.h"

namespace {

using dptrain::distributed::Communicator;
using dptrain::parallel::Backend;
using dptrain::testing::float64_small_resnet;
using dptrain::testing::run_ranks;

constexpr int64_t kBatch = 12;  // splits evenly over 2 and 3 ranks
constexpr int kBatchNormSteps = 20;

struct Batches {
  std::vector<torch::Tensor> images, labels;
};

// Drawn once, on the test's thread: every backend sees the same batches.
Batches make_batches() {
  torch::manual_seed(11);
  Batches b;
  for (int s = 0; s < kBatchNormSteps; ++s) {
    // Not centred, so that the running statistics move away from their initial 0 and 1.
    b.images.push_back(torch::rand({kBatch, 1, 28, 28}, torch::kFloat64) * 2 + 0.5);
    b.labels.push_back(torch::randint(10, {kBatch}, torch::kLong));
  }
  return b;
}

struct State {
  std::vector<torch::Tensor> params, buffers;
};

State state_of(Backend& backend) {
  State s;
  for (const auto& p : backend.parameters()) s.params.push_back(p.detach().clone());
  for (const auto& b : backend.buffers()) s.buffers.push_back(b.detach().clone());
  return s;
}

// SGD steps on `part` of each batch (this rank's shard, or all of it).
State train_steps(Backend& backend, const Batches& data, int64_t begin, int64_t size) {
  torch::optim::SGD sgd(backend.parameters(), torch::optim::SGDOptions(0.1));
  backend.set_training(true);
  for (int s = 0; s < kBatchNormSteps; ++s) {
    sgd.zero_grad();
    const torch::Tensor x = data.images[s].narrow(0, begin, size);
    const torch::Tensor y = data.labels[s].narrow(0, begin, size);
    torch::nn::functional::cross_entropy(backend.forward(x), y).backward();
    backend.finish_backward();
    sgd.step();
  }
  backend.set_training(false);  // ddp: the ranks' buffers become rank 0's
  return state_of(backend);
}

double max_difference(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].sizes() == b[i].sizes());
    worst = std::max(
        worst, (a[i].to(torch::kFloat64) - b[i].to(torch::kFloat64)).abs().max().item<double>());
  }
  return worst;
}

std::vector<State> train_ddp(int world, const Batches& data, bool sync_batchnorm) {
  std::vector<State> states(static_cast<size_t>(world));
  run_ranks(world, [&](int rank, std::unique_ptr<Communicator>& comm) {
    dptrain::parallel::DistributedDataParallel ddp(float64_small_resnet(), torch::kCPU,
                                                   std::move(comm), /*bucket_bytes=*/1 << 20,
                                                   /*zero_stage=*/0, sync_batchnorm);
    const int64_t shard = kBatch / world;
    states[static_cast<size_t>(rank)] = train_steps(ddp, data, rank * shard, shard);
  });
  return states;
}

}  // namespace

TEST_CASE(
    "SyncBatchNorm on 2 and 3 ddp ranks takes one device's steps on the whole batch, "
    "parameters and buffers alike",
    "[parallel][batchnorm]") {
  const Batches data = make_batches();
  dptrain::parallel::SingleDevice single(float64_small_resnet(), torch::kCPU);
  const State one = train_steps(single, data, 0, kBatch);
  // The running statistics moved: a comparison of untouched buffers would prove nothing.
  CHECK(one.buffers.at(0).abs().max().item<double>() > 0.05);
  for (const int world : {2, 3}) {
    INFO(world << " ranks");
    const std::vector<State> ranks = train_ddp(world, data, /*sync_batchnorm=*/true);
    for (const State& rank : ranks) {
      CHECK(max_difference(rank.params, one.params) < 1e-10);
      CHECK(max_difference(rank.buffers, one.buffers) < 1e-10);
      // num_batches_tracked counts steps exactly.
      CHECK(rank.buffers.back().item<int64_t>() == kBatchNormSteps);
    }
  }
}

TEST_CASE(
    "without SyncBatchNorm each ddp rank normalises its own shard from rank 0's buffers, "
    "which is dp's arithmetic on the same chunks",
    "[parallel][batchnorm]") {
  const Batches data = make_batches();
  dptrain::parallel::DataParallel dp(float64_small_resnet(), {torch::kCPU, torch::kCPU},
                                     torch::kCPU);
  const State replicas = train_steps(dp, data, 0, kBatch);
  const std::vector<State> ranks = train_ddp(2, data, /*sync_batchnorm=*/false);
  for (const State& rank : ranks) {
    CHECK(max_difference(rank.params, replicas.params) < 1e-10);
    CHECK(max_difference(rank.buffers, replicas.buffers) < 1e-10);
  }
  // Not the whole batch's statistics: SyncBatchNorm's buffers differ.
  const std::vector<State> synced = train_ddp(2, data, /*sync_batchnorm=*/true);
  CHECK(max_difference(synced[0].buffers, replicas.buffers) > 1e-4);
}

TEST_CASE("dp keeps the first replica's running statistics, as torch.nn.DataParallel",
          "[parallel][batchnorm][dp]") {
  const Batches data = make_batches();
  torch::nn::AnyModule model = float64_small_resnet();
  // The stem convolution's output on the first chunk (6 of 12 samples) before any step.
  const auto stem = model.ptr()->named_children()[0].value();
  torch::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    const auto* conv = stem->as<torch::nn::Conv2dImpl>();
    const torch::Tensor out =
        torch::conv2d(data.images[0].narrow(0, 0, kBatch / 2), conv->weight, conv->bias,
                      /*stride=*/2, /*padding=*/1);
    expected = 0.1 * out.mean({0, 2, 3});  // momentum 0.1 from running_mean 0
  }
  dptrain::parallel::DataParallel dp(model, {torch::kCPU, torch::kCPU}, torch::kCPU);
  dp.set_training(true);
  torch::NoGradGuard no_grad;  // a forward alone updates the statistics
  dp.forward(data.images[0]);
  CHECK(torch::allclose(dp.buffers().at(0), expected, /*rtol=*/1e-12, /*atol=*/1e-12));
}
