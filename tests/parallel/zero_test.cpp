// ZeRO (parallel.zero_stage 1 and 2) on W Gloo ranks, through the trainer's own step functions:
// the parameters equal stage 0's bit for bit after every step, on every rank; the flat layout's
// padding is zero and counted nowhere (the clipped norm is clip_grad_norm_'s); each rank holds
// 1/W of the optimizer's state.
#include "support/catch.h"
#include "support/models.h"
#include "support/rank_threads.h"
#include "support/runs.h"

#include "optim/param_state.h"
#include "parallel/ddp.h"
#include "parallel/flat_layout.h"
#include "parallel/zero_optimizer.h"
#include "train/step.h"

namespace {

using dptrain::parallel::DistributedDataParallel;
using dptrain::testing::max_relative_difference;
using dptrain::testing::run_ranks;
using dptrain::train::Session;

enum class Kind { kSgdMomentum, kAdam };

std::unique_ptr<torch::optim::Optimizer> make_optimizer(Kind kind,
                                                        std::vector<torch::Tensor> params) {
  if (kind == Kind::kAdam) {
    return std::make_unique<torch::optim::Adam>(std::move(params),
                                                torch::optim::AdamOptions(1e-3).weight_decay(1e-4));
  }
  return std::make_unique<torch::optim::SGD>(std::move(params),
                                             torch::optim::SGDOptions(0.05).momentum(0.9));
}

Session session_on(std::unique_ptr<DistributedDataParallel> backend, Kind kind) {
  Session s;
  s.backend = std::move(backend);
  s.optimizer = s.backend->make_optimizer([kind](std::vector<torch::Tensor> params) {
    return make_optimizer(kind, std::move(params));
  });
  return s;
}

struct Data {
  torch::Tensor images;
  torch::Tensor labels;
};

Data data(int64_t n) {
  auto g = at::detail::createCPUGenerator(/*seed_val=*/5);
  return {torch::rand({n, 1, 28, 28}, g), torch::randint(0, 10, {n}, g, torch::kInt64)};
}

constexpr int64_t kBatch = 48;  // splits over 1, 2, 3 and 4 ranks
constexpr int64_t kSteps = 21;
// Several buckets, whose edges fall inside the ranks' shards.
constexpr int64_t kBucketBytes = 100'000;

torch::Tensor flat_copy(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : params) parts.push_back(p.detach().reshape({-1}).clone());
  return torch::cat(parts);
}

struct RankRun {
  std::vector<torch::Tensor> after_step;  // every parameter, flat, after each step
  int64_t optimizer_state_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t shard_numel = 0;
};

// kSteps steps of kBatch samples at `stage` on `world` ranks; per rank.
std::vector<RankRun> train(int world, int stage, Kind kind, const Data& d) {
  std::vector<RankRun> runs(static_cast<size_t>(world));
  run_ranks(world, [&](int rank, std::unique_ptr<dptrain::dist::Communicator>& comm) {
    Session s = session_on(
        std::make_unique<DistributedDataParallel>(dptrain::testing::float32_lenet(), torch::kCPU,
                                                  std::move(comm), kBucketBytes, stage),
        kind);
    RankRun& run = runs[static_cast<size_t>(rank)];
    const int64_t share = kBatch / world;
    for (int64_t step = 0; step < kSteps; ++step) {
      const int64_t first = step * kBatch + rank * share;
      dptrain::train::accumulate_micro_batch(s, d.images.narrow(0, first, share),
                                             d.labels.narrow(0, first, share), 0, 1);
      dptrain::train::take_optimizer_step(s, s.backend->optimizer_parameters(), /*lr=*/
                                          kind == Kind::kAdam ? 1e-3 : 0.05);
      run.after_step.push_back(flat_copy(s.backend->parameters()));
    }
    run.optimizer_state_bytes = dptrain::parallel::optimizer_state_bytes(*s.optimizer);
    run.gradient_bytes = s.backend->gradient_bytes();
    run.shard_numel = s.backend->optimizer_parameters().at(0).numel();
  });
  return runs;
}

const char* name_of(Kind kind) {
  return kind == Kind::kAdam ? "adam" : "sgd with momentum";
}

}  // namespace

TEST_CASE("ZeRO stages 1 and 2 take stage 0's steps bit for bit on 1 to 4 Gloo ranks",
          "[parallel][zero]") {
  const Data d = data(kSteps * kBatch);
  for (const Kind kind : {Kind::kSgdMomentum, Kind::kAdam}) {
    for (int world = 1; world <= 4; ++world) {
      const std::vector<RankRun> stage0 = train(world, 0, kind, d);
      const int64_t n = stage0[0].after_step[0].numel();
      // The steps moved the parameters: equal to the start would pass as well.
      REQUIRE(max_relative_difference({stage0[0].after_step.back()}, {stage0[0].after_step[0]}) >
              1e-3);
      for (const int stage : {1, 2}) {
        INFO(name_of(kind) << ", " << world << " ranks, stage " << stage);
        const std::vector<RankRun> sharded = train(world, stage, kind, d);
        for (int64_t step = 0; step < kSteps; ++step) {
          INFO("after step " << step + 1);
          for (const RankRun& rank : sharded) {
            CHECK(torch::equal(rank.after_step[step], stage0[0].after_step[step]));
          }
        }
        // Each rank holds ceil(N / W) elements of every state tensor (SGD: 1, Adam: 2).
        const int64_t shard = (n + world - 1) / world;
        const int64_t tensors = kind == Kind::kAdam ? 2 : 1;
        for (const RankRun& rank : sharded) {
          CHECK(rank.shard_numel == shard);
          CHECK(rank.optimizer_state_bytes == tensors * shard * 4);
          CHECK(stage0[0].optimizer_state_bytes == tensors * n * 4);
        }
        // Stage 2 keeps only its gradient shard between steps; stage 1 the whole of stage 0's.
        const int64_t grads = stage == 2 ? shard * 4 : stage0[0].gradient_bytes + shard * 4;
        CHECK(sharded[0].gradient_bytes == grads);
      }
    }
  }
}

namespace {

// A model of 4 tensors and 31 elements: 5 ranks hold 7 each, and the last 4 of rank 4's are
// padding.
struct TwoLayersImpl : torch::nn::Module {
  TwoLayersImpl()
      : first(register_module("first", torch::nn::Linear(3, 4))),
        second(register_module("second", torch::nn::Linear(4, 3))) {}
  torch::Tensor forward(const torch::Tensor& x) { return second(torch::relu(first(x))); }
  torch::nn::Linear first;
  torch::nn::Linear second;
};
TORCH_MODULE(TwoLayers);

torch::nn::AnyModule small_model() {
  static std::mutex draw;
  const std::lock_guard<std::mutex> lock(draw);
  torch::manual_seed(3);
  return torch::nn::AnyModule(TwoLayers());
}

dptrain::parallel::FlatLayout flat_layout(const std::vector<torch::Tensor>& params, int world) {
  std::vector<int64_t> numels;
  for (const auto& p : params) numels.push_back(p.numel());
  return {numels, dptrain::parallel::bucket_order(params, 1 << 20), world, /*rank=*/0};
}

struct ClipRun {
  double norm = 0;
  torch::Tensor clipped;  // the clipped gradient in the flat padded layout
  std::vector<torch::Tensor> params;
};

ClipRun clip_once(int world, int stage, const Data& d, double max_norm) {
  std::vector<double> norms(static_cast<size_t>(world));
  std::vector<torch::Tensor> grads(static_cast<size_t>(world));
  std::vector<torch::Tensor> params(static_cast<size_t>(world));
  run_ranks(world, [&](int rank, std::unique_ptr<dptrain::dist::Communicator>& comm) {
    Session s = session_on(std::make_unique<DistributedDataParallel>(
                               small_model(), torch::kCPU, std::move(comm), 1 << 20, stage),
                           Kind::kSgdMomentum);
    const int64_t share = d.images.size(0) / world;
    dptrain::train::accumulate_micro_batch(s, d.images.narrow(0, rank * share, share),
                                           d.labels.narrow(0, rank * share, share), 0, 1);
    const auto tensors = s.backend->optimizer_parameters();
    norms[static_cast<size_t>(rank)] =
        dptrain::train::clip_gradient_norm(tensors, max_norm, *s.backend);
    std::vector<torch::Tensor> g;
    for (const auto& t : tensors) g.push_back(t.grad().clone());
    // Unsharded: laid out as the shards are, to compare element by element.
    grads[static_cast<size_t>(rank)] =
        stage > 0 ? g.at(0) : flat_layout(s.backend->parameters(), world).flatten(g);
    s.optimizer->step();
    params[static_cast<size_t>(rank)] = flat_copy(s.backend->parameters());
  });
  for (int r = 1; r < world; ++r) REQUIRE(norms[static_cast<size_t>(r)] == norms[0]);
  return {norms[0], stage == 0 ? grads[0] : torch::cat(grads), params};
}

}  // namespace

TEST_CASE("ZeRO pads 31 elements over 5 ranks with zeros that no norm or step sees",
          "[parallel][zero]") {
  auto g = at::detail::createCPUGenerator(/*seed_val=*/9);
  const Data d{torch::randn({20, 3}, g) * 10, torch::randint(0, 3, {20}, g, torch::kInt64)};
  const ClipRun whole = clip_once(5, 0, d, /*max_norm=*/0.01);
  REQUIRE(whole.clipped.numel() == 35);  // 5 shards of 7
  REQUIRE(whole.norm > 0.1);             // so that the clipping acts
  for (const int stage : {1, 2}) {
    INFO("stage " << stage);
    const ClipRun sharded = clip_once(5, stage, d, 0.01);
    CHECK(std::abs(sharded.norm - whole.norm) <= 1e-7 * whole.norm);
    REQUIRE(sharded.clipped.numel() == 35);
    // The padding's gradient stays zero.
    CHECK(torch::equal(sharded.clipped.narrow(0, 31, 4), torch::zeros({4})));
    CHECK(max_relative_difference({sharded.clipped}, {whole.clipped}) <= 1e-7);
    for (const auto& p : sharded.params) {
      CHECK(max_relative_difference({p}, {whole.params[0]}) <= 1e-6);
    }
  }
}
