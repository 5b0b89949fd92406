#include "support/catch.h"
#include "support/skip.h"
#include "support/threads.h"

#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "build_features.h"
#include "kernels/conv_input_grad.h"
#include "kernels/conv_weight_grad.h"
#include "kernels/cpu_kernels.h"

using namespace dptrain::kernels;
using dptrain::testing::at_one_and_two_threads;

namespace {

// LibTorch's input gradient of conv2d(input, weight), stride 1, no padding, in float64.
torch::Tensor reference_input_grad(const torch::Tensor& grad_output, const torch::Tensor& weight,
                                   torch::IntArrayRef input_size) {
  const auto input = torch::zeros(input_size, torch::kFloat64);
  return std::get<0>(at::convolution_backward(
      grad_output.to(torch::kFloat64), input, weight.to(torch::kFloat64), c10::nullopt, {1, 1},
      {0, 0}, {1, 1}, false, {0, 0}, 1, {true, false, false}));
}

// LibTorch's weight and bias gradients of conv2d(input, weight, bias), in float64.
std::pair<torch::Tensor, torch::Tensor> reference_weight_grad(const torch::Tensor& grad_output,
                                                              const torch::Tensor& input,
                                                              const torch::Tensor& weight) {
  const int64_t bias_size = weight.size(0);
  auto [unused, weight_grad, bias_grad] = at::convolution_backward(
      grad_output.to(torch::kFloat64), input.to(torch::kFloat64), weight.to(torch::kFloat64),
      at::IntArrayRef(bias_size), {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1, {false, true, true});
  return {weight_grad, bias_grad};
}

// Set by a RecordFunction callback when a kernel runs on this thread.
thread_local bool input_grad_ran = false;
thread_local bool weight_grad_ran = false;

// loss.backward(), setting the flags above for the kernels that ran in it.
void backward_watching_kernels(const torch::Tensor& loss) {
  input_grad_ran = weight_grad_ran = false;
  const auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(
      [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        if (std::string(fn.name()) == kConvInputGradOp) input_grad_ran = true;
        if (std::string(fn.name()) == kConvWeightGradOp) weight_grad_ran = true;
        return nullptr;
      }));
  loss.backward();
  at::removeCallback(handle);
}

struct ConvGradShape {
  int64_t images, in_channels, out_channels, kernel_h, kernel_w, out_h, out_w;
  std::vector<int64_t> input_size() const {
    return {images, in_channels, out_h + kernel_h - 1, out_w + kernel_w - 1};
  }
};

}  // namespace

TEST_CASE("dptrain's convolution input gradient equals LibTorch's", "[kernels]") {
  // LeNet's conv2 (a strip of 100 floats in 4 chunks, 81 pixels: 27 groups of 3); a strip of 9
  // floats with 20 pixels (the last 2 one at a time); 40 channels x 3 columns (15 vectors in 4
  // chunks); one of everything; a kernel wider than high; more output than input channels and
  // fewer; a strip shorter than a vector over groups of 3 pixels.
  const std::vector<ConvGradShape> shapes = {{5, 20, 50, 5, 5, 9, 9}, {3, 3, 7, 3, 3, 4, 5},
                                             {2, 40, 16, 5, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1},
                                             {2, 8, 4, 2, 7, 6, 2},   {3, 16, 2, 3, 3, 7, 7},
                                             {2, 2, 5, 2, 3, 4, 4}};
  for (const auto& s : shapes) {
    CAPTURE(s.images, s.in_channels, s.out_channels, s.kernel_h, s.kernel_w, s.out_h, s.out_w);
    torch::manual_seed(static_cast<uint64_t>(s.in_channels * 100 + s.out_channels));
    const auto weight = torch::randn({s.out_channels, s.in_channels, s.kernel_h, s.kernel_w});
    // Standard layout, not channels-last: the kernel converts what it is given.
    const auto grad = torch::randn({s.images, s.out_channels, s.out_h, s.out_w});
    REQUIRE(conv_input_grad_applies(grad, weight, s.input_size()));
    const auto ours = conv_input_grad(grad, weight, s.input_size());
    CHECK(ours.sizes() == torch::IntArrayRef(s.input_size()));
    CHECK(ours.is_contiguous(torch::MemoryFormat::ChannelsLast));
    const auto expected = reference_input_grad(grad, weight, s.input_size());
    // Each value sums up to out_channels x kh x kw products in float32: its error is bounded by a
    // small multiple of the sum of the products' magnitudes (the same gradient of |grad|, |w|).
    const auto magnitude = reference_input_grad(grad.abs(), weight.abs(), s.input_size());
    const auto error = (ours.to(torch::kFloat64) - expected).abs();
    CHECK((error <= magnitude * 1e-5).all().item<bool>());
    CHECK(magnitude.max().item<double>() > 0.5);  // the bound is not vacuous
  }
}

TEST_CASE("the convolution input gradient has the same bits at any thread count and batch split",
          "[kernels]") {
  torch::manual_seed(7);
  const ConvGradShape s{8, 20, 50, 5, 5, 9, 9};
  const auto weight = torch::randn({50, 20, 5, 5});
  const auto grad = torch::randn({8, 50, 9, 9});
  const auto [one, two, used] =
      at_one_and_two_threads([&] { return conv_input_grad(grad, weight, s.input_size()); });
  CHECK(torch::equal(one, two));
  // As dp's replicas split a batch: each image's gradient is its own.
  ConvGradShape part = s;
  part.images = 5;
  const auto middle = conv_input_grad(grad.slice(0, 2, 7), weight, part.input_size());
  CHECK(torch::equal(middle, one.slice(0, 2, 7)));
  // Without OpenMP in dptrain's build both runs above used one thread.
  if (used < 2)
    DPTRAIN_SKIP("dptrain's kernels reach one thread here: 1 and 2 threads not compared");
}

TEST_CASE("an infinite output gradient reaches the input where LibTorch's does, nowhere else",
          "[kernels]") {
  // The strip's padding lanes multiply the gradient by the weights' zero padding: inf x 0 is NaN,
  // which the kernel must not add to the next pixel's channels.
  torch::manual_seed(8);
  const ConvGradShape s{2, 20, 50, 5, 5, 9, 9};
  const auto weight = torch::randn({50, 20, 5, 5});
  auto grad = torch::randn({2, 50, 9, 9});
  grad.index_put_({0, 3, 0, 8}, std::numeric_limits<float>::infinity());
  grad.index_put_({1, 7, 4, 4}, std::numeric_limits<float>::quiet_NaN());
  const auto ours = conv_input_grad(grad, weight, s.input_size());
  const auto expected = reference_input_grad(grad, weight, s.input_size());
  CHECK(torch::equal(torch::isfinite(ours), torch::isfinite(expected)));
  CHECK(torch::isfinite(expected).logical_not().sum().item<int64_t>() == 2 * 20 * 5 * 5);
}

TEST_CASE("dptrain's convolution weight and bias gradients equal LibTorch's", "[kernels]") {
  // The input gradient's shapes; 37 images: 5 blocks of partial sums, the last one short; 530:
  // 67 blocks, summed in groups of 32, 32 and 3; and images smaller than a strip's padding (each
  // strip reads past its image, several images on).
  const std::vector<ConvGradShape> shapes = {
      {5, 20, 50, 5, 5, 9, 9}, {37, 20, 50, 5, 5, 9, 9}, {530, 3, 4, 2, 2, 3, 3},
      {3, 3, 7, 3, 3, 4, 5},   {2, 40, 16, 5, 3, 3, 3},  {1, 1, 1, 1, 1, 1, 1},
      {2, 8, 4, 2, 7, 6, 2},   {3, 16, 2, 3, 3, 7, 7},   {2, 2, 5, 2, 3, 4, 4},
      {3, 1, 1, 1, 1, 1, 1},   {4, 3, 1, 1, 1, 1, 1}};
  for (const auto& s : shapes) {
    CAPTURE(s.images, s.in_channels, s.out_channels, s.kernel_h, s.kernel_w, s.out_h, s.out_w);
    torch::manual_seed(static_cast<uint64_t>(s.in_channels * 10 + s.out_channels + s.images));
    const auto weight = torch::randn({s.out_channels, s.in_channels, s.kernel_h, s.kernel_w});
    const auto grad = torch::randn({s.images, s.out_channels, s.out_h, s.out_w});
    const auto input = torch::randn(s.input_size());  // standard layout: converted
    REQUIRE(conv_weight_grad_applies(grad, input, weight));
    const auto [weight_grad, bias_grad] = conv_weight_grad(grad, input, weight);
    const auto [expected_weight, expected_bias] = reference_weight_grad(grad, input, weight);
    const auto [magnitude_weight, magnitude_bias] =
        reference_weight_grad(grad.abs(), input.abs(), weight);
    CHECK(weight_grad.sizes() == weight.sizes());
    CHECK(bias_grad.sizes() == torch::IntArrayRef({s.out_channels}));
    CHECK(((weight_grad.to(torch::kFloat64) - expected_weight).abs() <= magnitude_weight * 1e-5)
              .all()
              .item<bool>());
    CHECK(((bias_grad.to(torch::kFloat64) - expected_bias).abs() <= magnitude_bias * 1e-5)
              .all()
              .item<bool>());
    CHECK((magnitude_weight > 0).all().item<bool>());  // no weight's bound is vacuous
  }
}

TEST_CASE("the weight gradient of no images is zero, and a sliced input is read where it lies",
          "[kernels]") {
  torch::manual_seed(12);
  const auto weight = torch::randn({4, 3, 3, 3});
  const auto none =
      conv_weight_grad(torch::zeros({0, 4, 5, 5}), torch::zeros({0, 3, 7, 7}), weight);
  CHECK(torch::equal(none.first, torch::zeros({4, 3, 3, 3})));
  CHECK(torch::equal(none.second, torch::zeros({4})));
  // Images 2 to 4 of a channels-last batch: a view that starts inside the batch's storage.
  const auto batch = torch::randn({6, 3, 7, 7}).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto input = batch.slice(0, 2, 5);
  const auto grad = torch::randn({3, 4, 5, 5});
  const auto ours = conv_weight_grad(grad, input, weight);
  const auto expected = reference_weight_grad(grad, input, weight);
  CHECK(torch::allclose(ours.first.to(torch::kFloat64), expected.first, 1e-5, 1e-5));
  CHECK(torch::allclose(ours.second.to(torch::kFloat64), expected.second, 1e-5, 1e-5));
}

TEST_CASE("the convolution weight gradient has the same bits at any thread count", "[kernels]") {
  // conv2's shape on 37 images (5 blocks: one group), and 530 small images (67 blocks: groups of
  // partial sums one after the other).
  const std::vector<ConvGradShape> shapes = {{37, 20, 50, 5, 5, 9, 9}, {530, 3, 4, 2, 2, 3, 3}};
  for (const auto& s : shapes) {
    CAPTURE(s.images);
    torch::manual_seed(11);
    const auto weight = torch::randn({s.out_channels, s.in_channels, s.kernel_h, s.kernel_w});
    const auto grad = torch::randn({s.images, s.out_channels, s.out_h, s.out_w});
    const auto input = torch::randn(s.input_size());
    const auto [one, two, used] =
        at_one_and_two_threads([&] { return conv_weight_grad(grad, input, weight); });
    CHECK(torch::equal(one.first, two.first));
    CHECK(torch::equal(one.second, two.second));
    if (used < 2)
      DPTRAIN_SKIP("dptrain's kernels reach one thread here: 1 and 2 threads not compared");
  }
}

TEST_CASE("the weight gradient sums its blocks of 8 images in order, over any batch size",
          "[kernels]") {
  // 530 images are 67 blocks, more than the kernel holds partial sums for at once: the result is
  // still each block's gradient added in block order, to the bit.
  torch::manual_seed(15);
  const auto weight = torch::randn({4, 3, 2, 2});
  const auto grad = torch::randn({530, 4, 3, 3});
  const auto input = torch::randn({530, 3, 4, 4});
  const auto whole = conv_weight_grad(grad, input, weight);
  std::pair<torch::Tensor, torch::Tensor> in_order;
  for (int64_t first = 0; first < 530; first += 8) {
    const int64_t last = std::min<int64_t>(530, first + 8);
    const auto block =
        conv_weight_grad(grad.slice(0, first, last), input.slice(0, first, last), weight);
    in_order = first == 0 ? block
                          : std::pair{in_order.first + block.first, in_order.second + block.second};
  }
  CHECK(torch::equal(whole.first, in_order.first));
  CHECK(torch::equal(whole.second, in_order.second));
}

TEST_CASE("conv_input_grad refuses what it does not compute", "[kernels]") {
  const auto weight = torch::randn({4, 3, 3, 3});
  const auto grad = torch::randn({2, 4, 5, 5});
  CHECK(conv_input_grad_applies(grad, weight, {2, 3, 7, 7}));
  CHECK_FALSE(conv_input_grad_applies(grad, weight, {2, 3, 8, 7}));  // padding or a stride
  CHECK_FALSE(conv_input_grad_applies(grad, weight, {2, 4, 7, 7}));  // channels
  CHECK_FALSE(conv_input_grad_applies(grad, weight, {3, 3, 7, 7}));  // images
  CHECK_FALSE(conv_input_grad_applies(grad.to(torch::kFloat64), weight, {2, 3, 7, 7}));
  CHECK_FALSE(conv_input_grad_applies(grad.select(0, 0), weight, {2, 3, 7, 7}));
  // An image too large for the L2 cache (no blocking over its pixels) is oneDNN's.
  const auto wide = torch::randn({1, 4, 254, 254});
  CHECK(conv_input_grad_applies(torch::zeros({1, 4, 126, 126}), weight, {1, 3, 128, 128}));
  CHECK_FALSE(conv_input_grad_applies(wide, weight, {1, 3, 256, 256}));
  CHECK_THROWS(conv_input_grad(grad, weight, {2, 3, 8, 7}));
}

TEST_CASE("conv2d() leaves an image too large for its kernels to oneDNN", "[kernels]") {
  torch::manual_seed(13);
  const auto x = torch::randn({1, 4, 130, 130});  // 67,600 values: over the kernels' 64 Ki
  std::vector<torch::Tensor> grads[2];
  for (int reference = 0; reference < 2; ++reference) {
    const auto input = x.detach().clone().requires_grad_();
    torch::manual_seed(14);
    const auto w = torch::randn({2, 4, 3, 3}).requires_grad_();
    const auto b = torch::randn({2}).requires_grad_();
    const auto out = reference ? torch::conv2d(input, w, b) : conv2d(input, w, b);
    backward_watching_kernels(out.sum());
    CHECK_FALSE(input_grad_ran);
    CHECK_FALSE(weight_grad_ran);
    grads[reference] = {input.grad(), w.grad(), b.grad()};
  }
  for (size_t i = 0; i < 3; ++i) CHECK(torch::allclose(grads[0][i], grads[1][i], 1e-4, 1e-3));
}

TEST_CASE("conv2d() runs the gradients of its own and equals torch::conv2d", "[kernels]") {
  // Which of input, weight and bias need a gradient: all, and each left out in turn.
  const std::vector<std::array<bool, 3>> needs = {{true, true, true},
                                                  {false, true, true},
                                                  {true, false, true},
                                                  {true, true, false},
                                                  {false, false, true}};
  for (const auto& need : needs) {
    CAPTURE(need[0], need[1], need[2]);
    torch::manual_seed(9);
    const auto x = torch::randn({4, 20, 13, 13});
    const auto probe = torch::randn({4, 50, 9, 9});
    std::vector<torch::Tensor> grads[2];
    for (int reference = 0; reference < 2; ++reference) {
      const auto input = x.detach().clone().requires_grad_(need[0]);
      torch::manual_seed(10);
      const auto w = (torch::randn({50, 20, 5, 5}) * 0.1).requires_grad_(need[1]);
      const auto b = torch::randn({50}).requires_grad_(need[2]);
      const auto out = reference ? torch::conv2d(input, w, b) : conv2d(input, w, b);
      backward_watching_kernels((out * probe).sum());
      CHECK(input_grad_ran == (reference == 0 && need[0]));
      CHECK(weight_grad_ran == (reference == 0 && (need[1] || need[2])));
      grads[reference] = {input.grad(), w.grad(), b.grad()};
    }
    for (size_t i = 0; i < 3; ++i) {
      CAPTURE(i);
      REQUIRE(grads[0][i].defined() == need[i]);
      REQUIRE(grads[1][i].defined() == need[i]);
      if (need[i]) CHECK(torch::allclose(grads[0][i], grads[1][i], 1e-4, 1e-4));
    }
  }
}
