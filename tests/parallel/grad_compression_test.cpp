// The reducer's compressed buckets (parallel.grad_compression), ranks as threads over real Gloo
// groups: fp16 and bf16 means within their rounding, PowerSGD exact at full rank and, at ranks 1
// to 4, losing nothing over the steps (what the approximations left out is in the error feedback),
// with the bytes each sends.
#include "parallel/grad_reducer.h"

#include <ATen/CPUGeneratorImpl.h>

#include "support/catch.h"
#include "support/rank_threads.h"

namespace {

using dptrain::config::GradCompression;
using dptrain::distributed::Communicator;
using dptrain::parallel::CompressionSpec;
using dptrain::parallel::GradReducer;
using dptrain::testing::run_ranks;

// Two matrices worth compressing at rank 4 and a bias that is not (PyTorch's rule: (rows + cols)
// * rank * 2 < rows * cols).
std::vector<torch::Tensor> compression_params() {
  return {torch::zeros({40, 30}).requires_grad_(), torch::zeros({24, 50}).requires_grad_(),
          torch::zeros({30}).requires_grad_()};
}

// Rank r's gradient of parameter i, of full rank (a seeded normal draw, the same on every call):
// the loss sum(p * G) has gradient G.
torch::Tensor rank_gradient(int rank, size_t i, const torch::Tensor& p) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(100 * rank + i);
  return torch::randn(p.sizes(), generator) + 0.5 * rank;
}

// Where each parameter lies in the one bucket: the last registered first, the bias padded to 32
// floats (64-byte alignment).
constexpr int64_t kBucketOffset[] = {1232, 32, 0};
constexpr int64_t kBucketNumel = 2432;

// One reduced backward of every parameter's rank gradient; the mean the reducer leaves.
std::vector<torch::Tensor> reduce_once(GradReducer& reducer, std::vector<torch::Tensor>& params,
                                       int rank) {
  for (auto& p : params) p.mutable_grad() = torch::Tensor();
  reducer.prepare_for_backward();
  torch::Tensor loss = torch::zeros({});
  for (size_t i = 0; i < params.size(); ++i) {
    loss = loss + (params[i] * rank_gradient(rank, i, params[i])).sum();
  }
  loss.backward();
  reducer.finish();
  std::vector<torch::Tensor> means;
  for (const auto& p : params) means.push_back(p.grad().clone());
  return means;
}

torch::Tensor mean_over_ranks(size_t i, const torch::Tensor& p, int world) {
  torch::Tensor sum = torch::zeros_like(p);
  for (int r = 0; r < world; ++r) sum += rank_gradient(r, i, p);
  return sum / world;
}

double off_by(const torch::Tensor& got, const torch::Tensor& want) {
  return ((got - want).abs().max() / want.abs().max()).item<double>();
}

}  // namespace

TEST_CASE("fp16 and bf16 buckets carry the mean to their rounding, in half the bytes",
          "[parallel][slow_links]") {
  for (const auto& [kind, bound] :
       {std::pair{GradCompression::kFp16, 1e-3}, {GradCompression::kBf16, 8e-3}}) {
    for (const int world : {2, 3}) {
      run_ranks(world,
                [kind = kind, bound = bound, world](int rank, std::unique_ptr<Communicator>& comm) {
                  auto params = compression_params();
                  CompressionSpec spec;
                  spec.kind = kind;
                  GradReducer reducer(params, *comm, /*bucket_bytes=*/1 << 20,
                                      dptrain::parallel::all_reduce_into_grad(), spec);
                  const auto means = reduce_once(reducer, params, rank);
                  for (size_t i = 0; i < params.size(); ++i) {
                    const double off = off_by(means[i], mean_over_ranks(i, params[i], world));
                    RANK_CHECK(off > 0);
                    RANK_CHECK(off < bound);
                  }
                  // 2,430 floats and 2 of alignment gaps, as 2-byte values.
                  RANK_CHECK(comm->payload_bytes() == kBucketNumel * 2);
                });
    }
  }
}

TEST_CASE("PowerSGD at full rank gives the mean; its warm-up is the plain all-reduce bit for bit",
          "[parallel][slow_links]") {
  constexpr int kWorld = 2;
  run_ranks(kWorld, [](int rank, std::unique_ptr<Communicator>& comm) {
    auto params = compression_params();
    auto plain_params = compression_params();
    CompressionSpec spec;
    spec.kind = GradCompression::kPowerSgd;
    spec.powersgd_rank = 30;  // each matrix's smaller side or more: nothing is left out
    spec.powersgd_start_step = 1;
    spec.powersgd_min_compression = 0.01;  // compress even where it saves nothing
    GradReducer reducer(params, *comm, 1 << 20, dptrain::parallel::all_reduce_into_grad(), spec);
    GradReducer plain(plain_params, *comm, 1 << 20);
    const auto warm_up = reduce_once(reducer, params, rank);
    const auto whole = reduce_once(plain, plain_params, rank);
    for (size_t i = 0; i < params.size(); ++i) RANK_CHECK(torch::equal(warm_up[i], whole[i]));
    const auto compressed = reduce_once(reducer, params, rank);
    for (size_t i = 0; i < params.size(); ++i) {
      RANK_CHECK(off_by(compressed[i], mean_over_ranks(i, params[i], kWorld)) < 1e-4);
    }
  });
}

TEST_CASE("PowerSGD at ranks 1 to 4 loses nothing over the steps: the error feedback holds it",
          "[parallel][slow_links]") {
  constexpr int kWorld = 2;
  constexpr int kSteps = 6;
  for (int64_t matrix_rank = 1; matrix_rank <= 4; ++matrix_rank) {
    run_ranks(kWorld, [matrix_rank](int rank, std::unique_ptr<Communicator>& comm) {
      auto params = compression_params();
      CompressionSpec spec;
      spec.kind = GradCompression::kPowerSgd;
      spec.powersgd_rank = matrix_rank;
      GradReducer reducer(params, *comm, 1 << 20, dptrain::parallel::all_reduce_into_grad(), spec);
      std::vector<torch::Tensor> sums;
      for (const auto& p : params) sums.push_back(torch::zeros_like(p));
      for (int step = 0; step < kSteps; ++step) {
        const auto means = reduce_once(reducer, params, rank);
        for (size_t i = 0; i < params.size(); ++i) sums[i] += means[i];
      }
      // Each rank's error is what it sent less its share of what came back; over the ranks and
      // the steps, the approximations plus those errors are the exact means.
      const int64_t sent = comm->payload_bytes();
      // The state starts with the bucket's error, laid out as the bucket.
      torch::Tensor errors = reducer.compression_state().narrow(0, 0, kBucketNumel).clone();
      comm->all_reduce(errors, "the test's sum of errors");
      double worst_alone = 0;
      for (size_t i = 0; i < params.size(); ++i) {
        const torch::Tensor want = kSteps * mean_over_ranks(i, params[i], kWorld);
        const torch::Tensor error =
            errors.narrow(0, kBucketOffset[i], params[i].numel()).view(params[i].sizes());
        RANK_CHECK(off_by(sums[i] + error, want) < 1e-4);
        worst_alone = std::max(worst_alone, off_by(sums[i], want));
      }
      // At these ranks the approximations alone do miss part of the gradients.
      RANK_CHECK(worst_alone > 1e-3);
      // Per compressed step: P (rows x r) and Q (cols x r) of both matrices, and the bias whole.
      const int64_t per_step = ((40 + 30) * matrix_rank + (24 + 50) * matrix_rank + 30) * 4;
      RANK_CHECK(sent == kSteps * per_step);
    });
  }
}
