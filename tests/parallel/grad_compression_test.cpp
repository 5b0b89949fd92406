// The reducer's compressed buckets (parallel.grad_compression), ranks as threads over real Gloo
// groups: fp16 and bf16 means within their rounding, PowerSGD exact at full rank and, at ranks 1
// to 4, step for step what a reference computed here from every rank's gradients gives, with the
// bytes each sends.
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

TEST_CASE(
    "PowerSGD at full rank gives the mean, and its warm-up is the plain all-reduce bit for bit",
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

namespace {

// PowerSGD of one matrix as the paper and PyTorch's hook define it, computed from every rank's
// gradient at once: the reference the reducer must match. P is orthonormalised by LibTorch's QR,
// not the reducer's Gram-Schmidt (columns equal up to sign, which the approximation P Q^T does not
// see); Q warm-starts from the last step's.
struct ReferencePowerSgd {
  torch::Tensor q;                   // cols x rank
  std::vector<torch::Tensor> error;  // per rank, divided by the world size as its input

  torch::Tensor step(const std::vector<torch::Tensor>& grads) {
    const auto world = static_cast<int64_t>(grads.size());
    if (error.empty()) error.assign(grads.size(), torch::zeros_like(grads[0]));
    std::vector<torch::Tensor> m;
    torch::Tensor p = torch::zeros({grads[0].size(0), q.size(1)});
    for (size_t r = 0; r < grads.size(); ++r) {
      m.push_back(grads[r] / world + error[r]);
      p += m[r].mm(q);
    }
    p = std::get<0>(torch::linalg::qr(p));
    q = torch::zeros_like(q);
    for (const auto& mr : m) q += mr.t().mm(p);
    const torch::Tensor approximation = p.mm(q.t());
    for (size_t r = 0; r < grads.size(); ++r) error[r] = m[r] - approximation / world;
    return approximation;
  }
};

// Rank r's gradient of parameter i at step `step`.
torch::Tensor step_gradient(int rank, size_t i, const torch::Tensor& p, int step) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(1000 * step + 100 * rank + i);
  return torch::randn(p.sizes(), generator);
}

}  // namespace

TEST_CASE(
    "PowerSGD at ranks 1 to 4 over several buckets follows the paper's steps, warm start "
    "and error feedback included",
    "[parallel][slow_links]") {
  constexpr int kWorld = 2;
  constexpr int kSteps = 4;
  for (int64_t matrix_rank = 1; matrix_rank <= 4; ++matrix_rank) {
    run_ranks(kWorld, [matrix_rank](int rank, std::unique_ptr<Communicator>& comm) {
      auto params = compression_params();
      CompressionSpec spec;
      spec.kind = GradCompression::kPowerSgd;
      spec.powersgd_rank = matrix_rank;
      // 1000-byte buckets: the bias, the 24 x 50 and the 40 x 30 matrix each get one, launched and
      // completed in that order on both ranks.
      GradReducer reducer(params, *comm, 1000, dptrain::parallel::all_reduce_into_grad(), spec);
      RANK_REQUIRE(reducer.buckets().size() == 3);
      // The state: the buckets' errors (30 + 1200 + 1200), then each matrix's first Q.
      const torch::Tensor state = reducer.compression_state();
      ReferencePowerSgd wide, tall;  // parameter 1 (24 x 50), parameter 0 (40 x 30)
      wide.q = state.narrow(0, 2430, 50 * matrix_rank).view({50, matrix_rank}).clone();
      tall.q = state.narrow(0, 2430 + 50 * matrix_rank, 30 * matrix_rank)
                   .view({30, matrix_rank})
                   .clone();
      double worst_missed = 0;
      for (int step = 0; step < kSteps; ++step) {
        for (auto& p : params) p.mutable_grad() = torch::Tensor();
        reducer.prepare_for_backward();
        torch::Tensor loss = torch::zeros({});
        for (size_t i = 0; i < params.size(); ++i) {
          loss = loss + (params[i] * step_gradient(rank, i, params[i], step)).sum();
        }
        loss.backward();
        reducer.finish();
        std::vector<std::vector<torch::Tensor>> grads(params.size());
        for (size_t i = 0; i < params.size(); ++i) {
          for (int r = 0; r < kWorld; ++r) {
            grads[i].push_back(step_gradient(r, i, params[i], step));
          }
        }
        RANK_CHECK(off_by(params[0].grad(), tall.step(grads[0])) < 1e-4);
        RANK_CHECK(off_by(params[1].grad(), wide.step(grads[1])) < 1e-4);
        const torch::Tensor bias_mean = (grads[2][0] + grads[2][1]) / kWorld;
        RANK_CHECK(off_by(params[2].grad(), bias_mean) < 1e-5);
        worst_missed =
            std::max(worst_missed, off_by(params[0].grad(), (grads[0][0] + grads[0][1]) / kWorld));
      }
      // At these ranks the approximation is no mean: the test compares compressions.
      RANK_CHECK(worst_missed > 0.1);
      // Per step: P (rows x r) and Q (cols x r) of both matrices, and the bias whole.
      const int64_t per_step = ((40 + 30) * matrix_rank + (24 + 50) * matrix_rank + 30) * 4;
      RANK_CHECK(comm->payload_bytes() == kSteps * per_step);
    });
  }
}
