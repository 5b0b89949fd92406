// The reducer and the ddp backend in one process: ranks are threads over one in-process store,
// talking through real Gloo process groups.
#include "parallel/grad_reducer.h"

#include <mutex>

#include "support/catch.h"
#include "support/rank_threads.h"

#include "model/lenet.h"
#include "parallel/ddp.h"

namespace {

using dptrain::distributed::Communicator;
using dptrain::parallel::GradReducer;

using dptrain::testing::run_ranks;

// Four parameters of 100, 50, 200 and 10 floats, the same on every rank (no shared random
// generator: the ranks are threads).
std::vector<torch::Tensor> make_params() {
  std::vector<torch::Tensor> params;
  double scale = 0.5;
  for (int64_t n : {100, 50, 200, 10}) {
    params.push_back((torch::linspace(-1, 1, n) * scale).requires_grad_());
    scale += 0.25;
  }
  return params;
}

// Rank r's input for parameter i; the loss sum((p * x)^2) has gradient 2 p x^2.
torch::Tensor input(int rank, size_t i, int64_t n) {
  return torch::linspace(1, 2, n) * static_cast<double>(rank + 1) + static_cast<double>(i);
}

}  // namespace

TEST_CASE("buckets fill in reverse registration order up to the cap", "[parallel]") {
  using V = std::vector<std::vector<size_t>>;
  using dptrain::parallel::assign_buckets;
  CHECK(assign_buckets({400, 200, 800, 40}, 1000) == V{{3, 2}, {1, 0}});
  CHECK(assign_buckets({400, 200, 800, 40}, 1 << 20) == V{{3, 2, 1, 0}});
  // A parameter larger than the cap gets a bucket of its own.
  CHECK(assign_buckets({10, 5000, 10}, 100) == V{{2}, {1}, {0}});
}

TEST_CASE("the reducer leaves the mean gradient over the ranks, one all-reduce per bucket",
          "[parallel]") {
  constexpr int kWorld = 2;
  run_ranks(kWorld, [](int rank, std::unique_ptr<Communicator>& owned) {
    Communicator& comm = *owned;
    auto params = make_params();
    GradReducer reducer(params, comm, /*bucket_bytes=*/1000);
    RANK_REQUIRE(reducer.buckets().size() == 2);
    for (int step = 0; step < 3; ++step) {
      for (auto& p : params) p.mutable_grad() = torch::Tensor();
      reducer.prepare_for_backward();
      torch::Tensor loss = torch::zeros({});
      for (size_t i = 0; i < params.size(); ++i) {
        loss = loss + (params[i] * input(rank, i, params[i].numel())).pow(2).sum();
      }
      loss.backward();
      // Both buckets were launched from the hooks, during backward.
      RANK_CHECK(comm.all_reduces_launched() == 2 * (step + 1));
      reducer.finish();
      RANK_CHECK(comm.all_reduces_launched() == 2 * (step + 1));
      for (size_t i = 0; i < params.size(); ++i) {
        torch::Tensor mean_x2 = torch::zeros_like(params[i]);
        for (int r = 0; r < kWorld; ++r) mean_x2 += input(r, i, params[i].numel()).pow(2);
        mean_x2 /= kWorld;
        const torch::Tensor expected = 2 * params[i].detach() * mean_x2;
        RANK_CHECK(torch::allclose(params[i].grad(), expected, /*rtol=*/1e-6, /*atol=*/1e-6));
      }
    }
  });
}

TEST_CASE("buckets launch in index order, and a parameter without a gradient counts as zero",
          "[parallel]") {
  run_ranks(2, [](int rank, std::unique_ptr<Communicator>& owned) {
    Communicator& comm = *owned;
    auto params = make_params();
    GradReducer reducer(params, comm, /*bucket_bytes=*/1000);  // buckets {3, 2} and {1, 0}
    reducer.prepare_for_backward();
    // Only parameters 0 and 1 (bucket 1) get gradients: bucket 0 is not ready, so nothing may be
    // launched before it, and bucket 1 waits.
    torch::Tensor loss = (params[0] * input(rank, 0, 100)).pow(2).sum() +
                         (params[1] * input(rank, 1, 50)).pow(2).sum();
    if (rank == 0) loss = loss + (params[3] * input(rank, 3, 10)).pow(2).sum();
    loss.backward();
    RANK_CHECK(comm.all_reduces_launched() == 0);
    reducer.finish();
    RANK_CHECK(comm.all_reduces_launched() == 2);
    // Parameter 3 had a gradient on rank 0 alone: the mean is half of rank 0's.
    const torch::Tensor rank0 = 2 * params[3].detach() * input(0, 3, 10).pow(2);
    RANK_CHECK(torch::allclose(params[3].grad(), rank0 / 2, 1e-6, 1e-6));
    RANK_CHECK(torch::equal(params[2].grad(), torch::zeros({200})));
  });
}

TEST_CASE("each .grad is the reducer's bucket memory, through zero_grad, accumulation and steps",
          "[parallel]") {
  constexpr int kWorld = 2;
  run_ranks(kWorld, [](int rank, std::unique_ptr<Communicator>& owned) {
    Communicator& comm = *owned;
    auto params = make_params();
    GradReducer reducer(params, comm, /*bucket_bytes=*/1000);
    RANK_REQUIRE(reducer.gradients_are_views());
    // LibTorch's optimizer: its zero_grad() detach_()es every .grad, which a view would refuse.
    torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.1));
    const auto loss_of = [&](int of_rank, double scale) {
      torch::Tensor loss = torch::zeros({});
      for (size_t i = 0; i < params.size(); ++i) {
        loss = loss + scale * (params[i] * input(of_rank, i, params[i].numel())).pow(2).sum();
      }
      return loss;
    };
    for (int step = 0; step < 2; ++step) {
      sgd.zero_grad();
      loss_of(rank, 1.0).backward();  // no_sync: added into .grad, not reduced
      reducer.prepare_for_backward(/*include_accumulated=*/true);
      loss_of(rank, 2.0).backward();
      reducer.finish();
      // The gradients' memory is the reducer's: all of them within its gradient_bytes.
      uintptr_t low = UINTPTR_MAX, high = 0;
      for (const auto& p : params) {
        const auto at = reinterpret_cast<uintptr_t>(p.grad().data_ptr());
        low = std::min(low, at);
        high = std::max(high, at + static_cast<uintptr_t>(p.numel()) * 4);
      }
      RANK_CHECK(high - low <= static_cast<uintptr_t>(reducer.gradient_bytes()));
      for (const auto& p : params) RANK_CHECK(p.grad().is_alias_of(params[0].grad()));
      for (size_t i = 0; i < params.size(); ++i) {
        // Each rank's accumulated 1x + 2x of its own gradient, averaged over the ranks.
        torch::Tensor mean_x2 = torch::zeros_like(params[i]);
        for (int r = 0; r < kWorld; ++r) mean_x2 += 3 * input(r, i, params[i].numel()).pow(2);
        mean_x2 /= kWorld;
        RANK_CHECK(torch::allclose(params[i].grad(), 2 * params[i].detach() * mean_x2, 1e-5, 1e-5));
      }
      sgd.step();
    }
    // A second backward in one prepared step is refused before it adds into a bucket in flight.
    reducer.prepare_for_backward();
    loss_of(rank, 1.0).backward();
    std::string second;
    try {
      loss_of(rank, 1.0).backward();
    } catch (const std::exception& e) {
      second = e.what();
    }
    RANK_CHECK(second.find("a second backward before finish()") != std::string::npos);
    reducer.finish();
  });
}

TEST_CASE("ddp starts every rank from rank 0's parameters and lists every rank's device",
          "[parallel]") {
  constexpr int kWorld = 3;
  std::vector<std::vector<torch::Tensor>> initial(kWorld);
  std::vector<torch::Tensor> rank0_own;
  run_ranks(kWorld, [&](int rank, std::unique_ptr<Communicator>& comm) {
    torch::nn::AnyModule model;
    {
      // One thread at a time draws weights from the global generator, each with its own seed.
      static std::mutex draw;
      std::lock_guard<std::mutex> lock(draw);
      torch::manual_seed(static_cast<uint64_t>(100 + rank));
      model = torch::nn::AnyModule(dptrain::model::LeNet(0.01));
      if (rank == 0) {
        for (const auto& p : model.ptr()->parameters()) rank0_own.push_back(p.detach().clone());
      }
    }
    auto ddp = std::make_unique<dptrain::parallel::DistributedDataParallel>(
        model, torch::kCPU, std::move(comm), /*bucket_bytes=*/25 << 20);
    for (const auto& p : ddp->parameters()) {
      initial[static_cast<size_t>(rank)].push_back(p.detach().clone());
    }
    RANK_CHECK(ddp->devices() == std::vector<torch::Device>(kWorld, torch::kCPU));
  });
  REQUIRE(rank0_own.size() == 8);
  for (int r = 0; r < kWorld; ++r) {
    REQUIRE(initial[static_cast<size_t>(r)].size() == rank0_own.size());
    for (size_t i = 0; i < rank0_own.size(); ++i) {
      CHECK(torch::equal(initial[static_cast<size_t>(r)][i], rank0_own[i]));
    }
  }
}
