// dp in one process over repeated CPU devices: it takes the steps single-device training takes,
// whatever the batch sizes, and a replica's failure becomes an error that names it.
#include "parallel/data_parallel.h"

#include <iostream>
#include "support/catch.h"
#include "support/models.h"
#include "support/runs.h"
#include "support/skip.h"

#include "core/error.h"
#include "parallel/single.h"

namespace {

using dptrain::parallel::Backend;
using dptrain::parallel::chunk_sizes;
using dptrain::parallel::DataParallel;
namespace F = torch::nn::functional;

const torch::Device kCpu(torch::kCPU);

// In float64: summing a gradient over two chunks, not one batch, moves float32 results by about
// 1e-6.
using dptrain::testing::float64_lenet;
using dptrain::testing::max_relative_difference;

struct Batch {
  torch::Tensor images;
  torch::Tensor labels;
};

std::vector<Batch> batches(const std::vector<int64_t>& sizes) {
  torch::manual_seed(11);
  std::vector<Batch> out;
  for (const int64_t n : sizes) {
    out.push_back(
        {torch::rand({n, 1, 28, 28}, torch::kFloat64), torch::randint(0, 10, {n}, torch::kInt64)});
  }
  return out;
}

// SGD steps as the trainer takes them; returns the final parameters.
std::vector<torch::Tensor> train_steps(Backend& backend, const std::vector<Batch>& data) {
  // A step size that keeps training well conditioned: with a large one (0.5 here) rounding
  // differences grow until even two single-device runs with different thread counts part ways.
  torch::optim::SGD sgd(backend.parameters(), torch::optim::SGDOptions(0.1));
  for (const auto& b : data) {
    sgd.zero_grad();
    const torch::Device to = backend.input_device();
    const torch::Tensor loss = F::cross_entropy(backend.forward(b.images.to(to)), b.labels.to(to));
    loss.backward();
    backend.finish_backward();
    sgd.step();
  }
  std::vector<torch::Tensor> params;
  for (const auto& p : backend.parameters()) params.push_back(p.detach().cpu().clone());
  return params;
}

// Steps of 60 and a short batch of 7; with 3 devices also a batch of 2, smaller than the device
// count.
std::vector<int64_t> step_sizes(size_t devices) {
  std::vector<int64_t> sizes = {60, 60, 60, 60, 60, 7};
  if (devices > 2) sizes.push_back(2);
  return sizes;
}

}  // namespace

TEST_CASE("dp splits a batch into chunks as even as they can be", "[parallel][dp]") {
  CHECK(chunk_sizes(256, 2) == std::vector<int64_t>{128, 128});
  CHECK(chunk_sizes(10, 3) == std::vector<int64_t>{4, 3, 3});
  CHECK(chunk_sizes(5, 4) == std::vector<int64_t>{2, 1, 1, 1});
  CHECK(chunk_sizes(2, 3) == std::vector<int64_t>{1, 1});
  CHECK(chunk_sizes(1, 1) == std::vector<int64_t>{1});
}

TEST_CASE("dp over repeated CPU devices takes single-device training's steps", "[parallel][dp]") {
  // A short last batch of 7 (chunks of 4 and 3, or 3, 2 and 2), and with 3 devices a batch of 2.
  const size_t devices = GENERATE(2, 3);
  CAPTURE(devices);
  const std::vector<Batch> data = batches(step_sizes(devices));
  dptrain::parallel::SingleDevice single(float64_lenet(), kCpu);
  const auto initial = single.parameters();
  std::vector<torch::Tensor> start;
  for (const auto& p : initial) start.push_back(p.detach().clone());
  const auto expected = train_steps(single, data);

  DataParallel dp(float64_lenet(), std::vector<torch::Device>(devices, kCpu), kCpu);
  CHECK(max_relative_difference(dp.parameters(), start) == 0);
  const auto got = train_steps(dp, data);
  // The steps moved the parameters far more than the tolerance, so a lost replica would show.
  REQUIRE(max_relative_difference(start, expected) > 0.05);
  CHECK(max_relative_difference(got, expected) <= 1e-10);
}

TEST_CASE("dp over [cuda:0, cuda:0] takes single-device training's steps on cuda:0",
          "[parallel][dp][cuda]") {
  SKIP_WITHOUT_CUDA();
  const torch::Device gpu(torch::kCUDA, 0);
  const std::vector<Batch> data = batches(step_sizes(2));
  dptrain::parallel::SingleDevice single(float64_lenet(), gpu);
  const auto expected = train_steps(single, data);
  // Gathered on the GPU (the default) and on the host: streams, events and copies both ways.
  for (const torch::Device output : {gpu, kCpu}) {
    INFO("output device " << output.str());
    DataParallel dp(float64_lenet(), {gpu, gpu}, output);
    // float64 on the GPU: cuDNN's backward may sum in any order, so not bit for bit.
    CHECK(max_relative_difference(train_steps(dp, data), expected) <= 1e-9);
  }
}

TEST_CASE("dp's evaluation gives single-device logits", "[parallel][dp]") {
  dptrain::parallel::SingleDevice single(float64_lenet(), kCpu);
  DataParallel dp(float64_lenet(), {kCpu, kCpu, kCpu}, kCpu);
  single.set_training(false);
  dp.set_training(false);
  const torch::Tensor images = batches({50})[0].images;
  c10::InferenceMode inference;
  const torch::Tensor expected = single.forward(images);
  const torch::Tensor got = dp.forward(images);
  REQUIRE(got.sizes() == expected.sizes());
  CHECK(torch::allclose(got, expected, /*rtol=*/1e-12, /*atol=*/1e-12));
}

namespace {

// A model that fails on purpose: in forward for a negative input, and in backward for an input
// over 100. Each replica sees only its own chunk, so the test picks which replica fails.
class TripwireImpl : public torch::nn::Cloneable<TripwireImpl> {
 public:
  TripwireImpl() { reset(); }
  void reset() override { fc_ = register_module("fc", torch::nn::Linear(4, 3)); }
  torch::Tensor forward(torch::Tensor x) {
    if ((x < 0).any().item<bool>()) throw std::runtime_error("negative input");
    torch::Tensor out = fc_(x);
    if ((x > 100).any().item<bool>()) {
      out.register_hook(
          [](torch::Tensor) -> torch::Tensor { throw std::runtime_error("gradient tripwire"); });
    }
    return out;
  }

 private:
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(Tripwire);

// One training step of 4 samples; `rows` of the input get `value`.
void step(DataParallel& dp, std::vector<int64_t> rows, float value) {
  torch::Tensor x = torch::ones({4, 4});
  for (const int64_t r : rows) x[r].fill_(value);
  const torch::Tensor loss = F::cross_entropy(dp.forward(x), torch::zeros({4}, torch::kInt64));
  loss.backward();
  dp.finish_backward();
}

}  // namespace

TEST_CASE("a replica that throws stops the step with an error naming it", "[parallel][dp]") {
  DataParallel dp(torch::nn::AnyModule(Tripwire()), {kCpu, kCpu}, kCpu);
  using dptrain::core::Error;
  // Rows 2 and 3 are replica 1's chunk, rows 0 and 1 replica 0's (which runs on this thread).
  CHECK_THROWS_MATCHES(step(dp, {2, 3}, -1), Error,
                       Catch::Matchers::Message("dp: replica 1 of 2 (on cpu) failed in forward: "
                                                "negative input"));
  CHECK_THROWS_MATCHES(step(dp, {0}, -1), Error,
                       Catch::Matchers::Message("dp: replica 0 of 2 (on cpu) failed in forward: "
                                                "negative input"));
  try {
    step(dp, {3}, 200);
    FAIL("a gradient tripwire in replica 1 did not throw");
  } catch (const Error& e) {
    CHECK(e.code() == dptrain::core::ErrorCode::kRuntime);
    CHECK_THAT(e.what(),
               Catch::Matchers::StartsWith("dp: replica 1 of 2 (on cpu) failed in backward: ") &&
                   ContainsSubstring("gradient tripwire"));
  }
  // Nothing is left waiting: the next step runs on both replicas.
  CHECK_NOTHROW(step(dp, {}, 1));
}
