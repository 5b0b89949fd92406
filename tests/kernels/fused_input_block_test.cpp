#include "support/catch.h"
#include "support/skip.h"
#include "support/threads.h"

#include "build_features.h"
#include "core/torch_compat.h"
#include "kernels/cpu_kernels.h"
#include "kernels/fused_input_block.h"

using namespace dptrain::kernels;
using dptrain::testing::at_one_and_two_threads;

namespace {

struct InputBlockGrads {
  torch::Tensor out, weight_grad, bias_grad;
};

// Forward and the gradients of weight and bias under the loss sum(out * probe).
template <typename Block>
InputBlockGrads input_block_grads(Block block, const torch::Tensor& x, const torch::Tensor& w,
                                  const torch::Tensor& b, const torch::Tensor& probe) {
  const torch::Tensor weight = w.detach().clone().requires_grad_();
  const torch::Tensor bias = b.detach().clone().requires_grad_();
  InputBlockGrads r;
  r.out = block(x, weight, bias);
  (r.out * probe).sum().backward();
  r.weight_grad = weight.grad();
  r.bias_grad = bias.grad();
  return r;
}

torch::Tensor reference_block(const torch::Tensor& x, const torch::Tensor& w,
                              const torch::Tensor& b) {
  return torch::avg_pool2d(torch::relu(torch::conv2d(x, w, b)), 2);
}

}  // namespace

TEST_CASE("the fused input block computes conv, ReLU and average pooling, and their gradients",
          "[kernels]") {
  // LeNet's shape, channel counts that are and are not a multiple of the kernel's lanes, more
  // channels than one group of the kernel's accumulators holds (40: 32 + 8), a 5x5 kernel, and
  // odd convolution outputs whose last row and column the pooling drops, and a wide image.
  const std::vector<std::array<int64_t, 5>> shapes = {// images, height, width, channels, kernel
                                                      {9, 28, 28, 20, 3}, {3, 12, 12, 16, 3},
                                                      {2, 11, 11, 3, 5},  {5, 10, 10, 1, 2},
                                                      {2, 9, 9, 40, 3},   {3, 11, 16, 20, 3}};
  for (const auto& [images, height, width, channels, kernel] : shapes) {
    CAPTURE(images, height, width, channels, kernel);
    torch::manual_seed(static_cast<uint64_t>(height * width));
    // A strided input (every other column of a wider one) and, in channel 0, pre-activations
    // of exactly 0 (weight and bias zero), which ReLU blocks: no gradient may pass there.
    const auto x = torch::rand({images, 1, height, 2 * width}).slice(3, 0, 2 * width, 2);
    auto w = torch::randn({channels, 1, kernel, kernel}) * 0.3;
    auto b = torch::randn({channels}) * 0.1;  // some pre-activations negative, some not
    w[0].zero_();
    b[0].zero_();
    REQUIRE(fused_input_block_applies(x, w, b));
    const int64_t pooled_h = (height - kernel + 1) / 2, pooled_w = (width - kernel + 1) / 2;
    const auto probe = torch::randn({images, channels, pooled_h, pooled_w});
    const auto fused = input_block_grads(fused_input_block, x, w, b, probe);
    const auto reference = input_block_grads(reference_block, x, w, b, probe);
    REQUIRE(fused.out.sizes() == reference.out.sizes());
    CHECK(fused.out.is_contiguous(torch::MemoryFormat::ChannelsLast));
    CHECK(torch::allclose(fused.out, reference.out, /*rtol=*/1e-5, /*atol=*/1e-6));
    // The gradients sum thousands of products (LeNet's shape: 9 images x 676 pixels), in another
    // order than oneDNN's: against a float64 reference, within float32's rounding of such sums.
    const auto exact =
        input_block_grads(reference_block, x.to(torch::kDouble), w.to(torch::kDouble),
                          b.to(torch::kDouble), probe.to(torch::kDouble));
    for (const auto& [ours, theirs] : {std::pair{fused.weight_grad, exact.weight_grad},
                                       std::pair{fused.bias_grad, exact.bias_grad}}) {
      const double error = (ours.to(torch::kDouble) - theirs).abs().max().item<double>();
      const double scale = theirs.abs().max().item<double>();
      CAPTURE(error, scale);
      CHECK(error <= 1e-5 * scale);
    }
    CHECK(fused.bias_grad[0].item<float>() == 0.0f);
    // Without autograd (evaluation) the same output, with no mask kept.
    torch::NoGradGuard no_grad;
    CHECK(torch::equal(fused_input_block(x, w, b), fused.out.detach()));
  }
}

TEST_CASE("dptrain's own kernels split their work over every LibTorch thread", "[kernels]") {
  // Without OpenMP in dptrain's build, at::parallel_for runs the whole range on one thread.
  if (!DPTRAIN_WITH_GNU_OPENMP)
    DPTRAIN_SKIP("built without GNU OpenMP (clang): the kernels use one thread");
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  const int used = own_kernel_threads();
  at::set_num_threads(threads);
  CHECK(used == 2);
}

TEST_CASE("the fused input block's gradients are the same bits at any thread count", "[kernels]") {
  // LeNet's 20 channels (one group of 3 blocks) and 40 (a group of 4 and one of 1).
  for (const int64_t channels : {20, 40}) {
    CAPTURE(channels);
    torch::manual_seed(7);
    const auto x = torch::rand({37, 1, 28, 28});  // 37: a last block of images that is not full
    const auto w = torch::randn({channels, 1, 3, 3}) * 0.3;
    const auto b = torch::randn({channels}) * 0.1;
    const auto probe = torch::randn({37, channels, 13, 13});
    const auto runs = at_one_and_two_threads(
        [&] { return input_block_grads(fused_input_block, x, w, b, probe); });
    CHECK(torch::equal(runs.one.out, runs.two.out));
    CHECK(torch::equal(runs.one.weight_grad, runs.two.weight_grad));
    CHECK(torch::equal(runs.one.bias_grad, runs.two.bias_grad));
  }
}

TEST_CASE("the fused input block leaves what it cannot compute to LibTorch", "[kernels]") {
  const auto x = torch::rand({2, 1, 28, 28});
  const auto w = torch::randn({20, 1, 3, 3});
  const auto b = torch::randn({20});
  CHECK(fused_input_block_applies(x, w, b));
  CHECK_FALSE(fused_input_block_applies(torch::rand({2, 3, 28, 28}), torch::randn({20, 3, 3, 3}),
                                        b));  // 3 channels in
  CHECK_FALSE(fused_input_block_applies(x.to(torch::kFloat64), w.to(torch::kFloat64),
                                        b.to(torch::kFloat64)));              // not fp32
  CHECK_FALSE(fused_input_block_applies(x.clone().requires_grad_(), w, b));   // input grads
  CHECK_FALSE(fused_input_block_applies(x, w, torch::Tensor()));              // no bias
  CHECK_FALSE(fused_input_block_applies(x, torch::randn({20, 1, 3, 5}), b));  // not square
  CHECK_FALSE(fused_input_block_applies(torch::rand({2, 1, 3, 3}), w, b));    // 1x1 output
  // precision bf16: autocast's bfloat16 convolution, not this fp32 kernel.
  dptrain::core::compat::set_autocast_enabled(c10::DeviceType::CPU, true);
  const bool under_autocast = fused_input_block_applies(x, w, b);
  dptrain::core::compat::set_autocast_enabled(c10::DeviceType::CPU, false);
  CHECK_FALSE(under_autocast);
}
