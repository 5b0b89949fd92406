// Gradient accumulation (train.accumulate_grad_batches) through the trainer's own step functions:
// k micro-batches summed into one optimizer step take the step one batch of k times their size
// takes, on single, dp and ddp; ddp all-reduces once per optimizer step, not once per micro-batch.
// In float64, so that what is left between the runs is the accumulation's doing, not rounding.
#include "support/catch.h"
#include "support/models.h"
#include "support/rank_threads.h"
#include "support/runs.h"

#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/single.h"
#include "train/step.h"

namespace {

using dptrain::parallel::Backend;
using dptrain::testing::float64_lenet;
using dptrain::testing::max_relative_difference;
using dptrain::train::Session;

constexpr int64_t kAccumulationSteps = 2;  // optimizer steps, so that momentum carries between them
constexpr int64_t kMicroBatches = 4;

struct Data {
  torch::Tensor images;
  torch::Tensor labels;
};

Data make_data(int64_t n) {
  auto g = at::detail::createCPUGenerator(/*seed_val=*/11);
  return {torch::rand({n, 1, 28, 28}, g, torch::kFloat64),
          torch::randint(0, 10, {n}, g, torch::kInt64)};
}

Session session_on(std::unique_ptr<Backend> backend) {
  Session s;
  s.backend = std::move(backend);
  s.optimizer = std::make_unique<torch::optim::SGD>(s.backend->parameters(),
                                                    torch::optim::SGDOptions(0.1).momentum(0.9));
  return s;
}

// kAccumulationSteps optimizer steps of `micro` micro-batches of `size` samples each, this rank
// taking rows [rank * size / world, (rank + 1) * size / world) of every micro-batch; the final
// parameters.
std::vector<torch::Tensor> train_steps(Session& s, const Data& d, int64_t micro, int64_t size,
                                       int rank = 0, int world = 1) {
  const std::vector<torch::Tensor> params = s.backend->parameters();
  const int64_t share = size / world;
  for (int64_t step = 0; step < kAccumulationSteps; ++step) {
    for (int64_t i = 0; i < micro; ++i) {
      const int64_t first = (step * micro + i) * size + rank * share;
      dptrain::train::accumulate_micro_batch(s, d.images.narrow(0, first, share),
                                             d.labels.narrow(0, first, share), i, micro);
    }
    dptrain::train::take_optimizer_step(s, params, /*lr=*/0.1);
  }
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone());
  return out;
}

// One batch of micro * size per step on one device: what accumulation must equal.
std::vector<torch::Tensor> whole_batches(const Data& d, int64_t micro, int64_t size) {
  Session s =
      session_on(std::make_unique<dptrain::parallel::SingleDevice>(float64_lenet(), torch::kCPU));
  return train_steps(s, d, /*micro=*/1, micro * size);
}

}  // namespace

TEST_CASE("4 micro-batches of 64 take the step of one batch of 256 on single and dp",
          "[train][accumulation][slow]") {
  const Data d = make_data(kAccumulationSteps * 256);
  const auto expected = whole_batches(d, kMicroBatches, 64);
  Session single =
      session_on(std::make_unique<dptrain::parallel::SingleDevice>(float64_lenet(), torch::kCPU));
  const auto accumulated = train_steps(single, d, kMicroBatches, 64);
  CHECK(max_relative_difference(accumulated, expected) < 1e-10);
  // The parameters moved: equal to the start would pass the comparison above just as well.
  CHECK(max_relative_difference(accumulated, float64_lenet().ptr()->parameters()) > 1e-3);

  Session dp = session_on(std::make_unique<dptrain::parallel::DataParallel>(
      float64_lenet(), std::vector<torch::Device>{torch::kCPU, torch::kCPU}, torch::kCPU));
  CHECK(max_relative_difference(train_steps(dp, d, kMicroBatches, 64), expected) < 1e-10);
}

TEST_CASE(
    "ddp accumulates 4 micro-batches with one all-reduce per optimizer step, on 2 and 3 "
    "ranks",
    "[train][accumulation][ddp][slow]") {
  // Micro-batches of 64 over 2 ranks; 63 over 3 (64 does not split in three).
  for (const auto& [world, size] : {std::pair<int, int64_t>{2, 64}, {3, 63}}) {
    INFO(world << " ranks, micro-batches of " << size);
    const Data d = make_data(kAccumulationSteps * kMicroBatches * size);
    const auto expected = whole_batches(d, kMicroBatches, size);
    std::vector<std::vector<torch::Tensor>> results(static_cast<size_t>(world));
    dptrain::testing::run_ranks(
        world, [&, world = world, size = size](
                   int rank, std::unique_ptr<dptrain::distributed::Communicator>& owned) {
          dptrain::distributed::Communicator& comm = *owned;
          Session s = session_on(std::make_unique<dptrain::parallel::DistributedDataParallel>(
              float64_lenet(), torch::kCPU, std::move(owned), /*bucket_bytes=*/25 << 20));
          const int64_t before = comm.all_reduces_launched();
          results[static_cast<size_t>(rank)] = train_steps(s, d, kMicroBatches, size, rank, world);
          // LeNet's 0.5 MB of float64 gradients fill one bucket: one all-reduce per step.
          RANK_CHECK(comm.all_reduces_launched() - before == kAccumulationSteps);
        });
    for (const auto& r : results) CHECK(max_relative_difference(r, expected) < 1e-10);
  }
}
