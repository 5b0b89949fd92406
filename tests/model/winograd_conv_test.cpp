// dptrain's Winograd 3x3 convolution (model/winograd_conv.h): LibTorch's results in float64 within
// fp32's rounding, forward and all three gradients; the same bits at any thread count; what it
// refuses; where a non-finite input reaches; and ResNet-18 running it against LibTorch's own
// convolutions.
#include "support/catch.h"
#include "support/skip.h"

#include <limits>
#include <map>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "core/torch_compat.h"
#include "model/cpu_kernels.h"
#include "model/resnet.h"
#include "model/winograd_conv.h"

using namespace dptrain::model;

namespace {

struct Shape {
  int64_t images, inputs, outputs, height, width;
};

// The largest difference from `expected` (float64) as a share of its largest magnitude.
double relative_error(const torch::Tensor& got, const torch::Tensor& expected) {
  return ((got.to(torch::kFloat64) - expected).abs().max() / expected.abs().max()).item<double>();
}

// The calls of each op on this thread, by name (the CPU's backward runs on the caller's thread).
thread_local std::map<std::string, int> op_calls;

template <typename Body>
void counting_op_calls(Body body) {
  op_calls.clear();
  const auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(
      [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        ++op_calls[fn.name()];
        return nullptr;
      }));
  body();
  at::removeCallback(handle);
}

}  // namespace

TEST_CASE("the Winograd convolution equals LibTorch's forward and in all three gradients",
          "[model]") {
  // ResNet-18's first stage at a small size; odd heights and widths (tiles over the edge); one
  // pixel; one row; more outputs than inputs and fewer; a batch of one; 4,730 tiles, which the
  // weight gradient takes in two chunks (4,096 tiles a chunk at 16 channels).
  const std::vector<Shape> shapes = {{2, 64, 64, 14, 14}, {3, 16, 32, 5, 7}, {2, 32, 16, 1, 1},
                                     {1, 16, 16, 1, 6},   {2, 48, 64, 8, 3}, {1, 16, 48, 7, 7},
                                     {43, 16, 16, 19, 21}};
  for (const auto& s : shapes) {
    CAPTURE(s.images, s.inputs, s.outputs, s.height, s.width);
    torch::manual_seed(static_cast<uint64_t>(s.inputs * 1000 + s.outputs + s.height));
    const auto x = torch::randn({s.images, s.inputs, s.height, s.width}).requires_grad_();
    const auto w = (torch::randn({s.outputs, s.inputs, 3, 3}) * 0.1).requires_grad_();
    const auto b = torch::randn({s.outputs}).requires_grad_();
    const auto probe = torch::randn({s.images, s.outputs, s.height, s.width});
    REQUIRE(winograd_conv_applies(x, w, b));
    const auto y = winograd_conv(x, w, b);
    CHECK(y.is_contiguous(torch::MemoryFormat::ChannelsLast));
    (y * probe).sum().backward();

    const auto x64 = x.detach().to(torch::kFloat64).requires_grad_();
    const auto w64 = w.detach().to(torch::kFloat64).requires_grad_();
    const auto b64 = b.detach().to(torch::kFloat64).requires_grad_();
    const auto y64 = torch::conv2d(x64, w64, b64, /*stride=*/1, /*padding=*/1);
    (y64 * probe.to(torch::kFloat64)).sum().backward();
    // fp32 rounds at 6e-8; the sums here run over up to 576 products, and the transforms add up
    // to 16 terms before them.
    CHECK(relative_error(y, y64) < 2e-6);
    CHECK(relative_error(x.grad(), x64.grad()) < 2e-6);
    CHECK(relative_error(w.grad(), w64.grad()) < 2e-6);
    CHECK(relative_error(b.grad(), b64.grad()) < 1e-6);
  }
}

TEST_CASE("the Winograd convolution reads any layout and leaves out what needs no gradient",
          "[model]") {
  torch::manual_seed(3);
  const auto x = torch::randn({2, 32, 6, 5});
  const auto w = torch::randn({16, 32, 3, 3});
  const auto standard = winograd_conv(x, w, torch::Tensor());
  CHECK(torch::equal(winograd_conv(x.contiguous(torch::MemoryFormat::ChannelsLast), w, {}),
                     standard));
  // A slice of a wider batch, and weights in another layout, give the same bits.
  const auto wide = torch::randn({2, 64, 6, 5});
  wide.slice(1, 16, 48).copy_(x);
  CHECK(torch::equal(winograd_conv(wide.slice(1, 16, 48), w, {}), standard));
  CHECK(
      torch::equal(winograd_conv(x, w.transpose(0, 1).contiguous().transpose(0, 1), {}), standard));
  // Asked for one gradient of the two, the backward pass computes that one alone.
  const auto weight = w.clone().requires_grad_();
  const auto input = x.clone().requires_grad_();
  for (const bool of_weight : {true, false}) {
    CAPTURE(of_weight);
    torch::Tensor grad;
    counting_op_calls([&] {
      const auto y = winograd_conv(input, weight, torch::Tensor());
      grad = torch::autograd::grad({y.sum()}, {of_weight ? weight : input})[0];
    });
    CHECK(grad.sizes() == (of_weight ? weight : input).sizes());
    CHECK(op_calls[kWinogradConvOp] == 1);
    CHECK(op_calls[kWinogradWeightGradOp] == (of_weight ? 1 : 0));
    CHECK(op_calls[kWinogradInputGradOp] == (of_weight ? 0 : 1));
  }
}

TEST_CASE("the Winograd convolution has the same bits at any thread count and batch split",
          "[model]") {
  torch::manual_seed(4);
  const auto x = torch::randn({6, 32, 9, 9});
  const auto w = torch::randn({48, 32, 3, 3}) * 0.1;
  const auto b = torch::randn({48});
  const auto probe = torch::randn({6, 48, 9, 9});
  const auto run = [&](const torch::Tensor& images, const torch::Tensor& grad) {
    const auto input = images.clone().requires_grad_();
    const auto weight = w.clone().requires_grad_();
    const auto bias = b.clone().requires_grad_();
    const auto y = winograd_conv(input, weight, bias);
    (y * grad).sum().backward();
    return std::vector<torch::Tensor>{y, input.grad(), weight.grad(), bias.grad()};
  };
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = run(x, probe);
  at::set_num_threads(2);
  const auto two = run(x, probe);
  const int used = own_kernel_threads();
  at::set_num_threads(threads);
  for (size_t i = 0; i < one.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::equal(one[i], two[i]));
  }
  // As dp's replicas split a batch: each image's output and input gradient are its own.
  const auto part = run(x.slice(0, 2, 5), probe.slice(0, 2, 5));
  CHECK(torch::equal(part[0], one[0].slice(0, 2, 5)));
  CHECK(torch::equal(part[1], one[1].slice(0, 2, 5)));
  if (used < 2)
    DPTRAIN_SKIP("dptrain's kernels reach one thread here: 1 and 2 threads not compared");
}

TEST_CASE("a non-finite input reaches the outputs a direct convolution's would and no others",
          "[model]") {
  // At every position of a 7x7 image (the last row and column of tiles hang over the edge): the
  // transforms add and subtract a tile's inputs, and the products' sums are taken apart again, so
  // an infinity may come out NaN; but no output beyond the 3x3 neighbourhood may be reached.
  torch::manual_seed(5);
  const auto w = torch::randn({16, 16, 3, 3});
  for (int64_t row = 0; row < 7; ++row) {
    for (int64_t col = 0; col < 7; ++col) {
      CAPTURE(row, col);
      auto x = torch::randn({2, 16, 7, 7});
      x.index_put_({1, 5, row, col}, std::numeric_limits<float>::infinity());
      const auto y = winograd_conv(x, w, torch::Tensor());
      const auto expected = torch::conv2d(x.to(torch::kFloat64), w.to(torch::kFloat64), {}, 1, 1);
      CHECK(torch::equal(torch::isfinite(y), torch::isfinite(expected)));
    }
  }
}

TEST_CASE("winograd_conv refuses what it does not compute", "[model]") {
  const auto x = torch::randn({2, 16, 5, 5});
  const auto w = torch::randn({16, 16, 3, 3});
  CHECK(winograd_conv_applies(x, w, torch::randn({16})));
  CHECK(winograd_conv_applies(x, w, torch::Tensor()));
  CHECK_FALSE(winograd_conv_applies(x, w, torch::randn({8})));  // bias's size
  CHECK_FALSE(winograd_conv_applies(torch::randn({2, 8, 5, 5}), torch::randn({16, 8, 3, 3}), {}));
  CHECK_FALSE(winograd_conv_applies(x, torch::randn({24, 16, 3, 3}), {}));  // outputs not x16
  CHECK_FALSE(winograd_conv_applies(x, torch::randn({16, 16, 5, 5}), {}));  // not 3x3
  CHECK_FALSE(winograd_conv_applies(torch::randn({0, 16, 5, 5}), w, {}));   // no images
  CHECK_FALSE(winograd_conv_applies(x.to(torch::kFloat64), w.to(torch::kFloat64), {}));
  CHECK_FALSE(winograd_conv_applies(x.to(torch::kBFloat16), w.to(torch::kBFloat16), {}));
  {
    namespace compat = dptrain::core::compat;
    const bool was_enabled = compat::autocast_enabled(c10::DeviceType::CPU);
    compat::set_autocast_enabled(c10::DeviceType::CPU, true);
    const bool under_autocast = winograd_conv_applies(x, w, {});
    compat::set_autocast_enabled(c10::DeviceType::CPU, was_enabled);
    CHECK_FALSE(under_autocast);
  }
  CHECK_THROWS_WITH(winograd_conv(x, torch::randn({16, 16, 5, 5}), {}),
                    Catch::Contains("winograd_conv: shapes or tensors it does not take"));
}

TEST_CASE(
    "ResNet-18 runs its 13 stride-1 3x3 convolutions in the Winograd kernels and matches float64",
    "[model]") {
  torch::manual_seed(6);
  ResNet18 net(/*init_std=*/0.05);
  auto reference = std::dynamic_pointer_cast<ResNet18Impl>(net->clone());
  reference->to(torch::kFloat64);  // float64: LibTorch's convolutions throughout
  const auto x = torch::randn({3, 1, 28, 28});
  const auto labels = torch::tensor({1, 4, 7});
  torch::Tensor loss;
  counting_op_calls([&] {
    loss = torch::cross_entropy_loss(net->forward(x), labels);
    loss.backward();
  });
  // The stages' convolutions but the 3 strided ones (and the stem and the 3 1x1 shortcuts).
  CHECK(op_calls[kWinogradConvOp] == 13);
  CHECK(op_calls[kWinogradWeightGradOp] == 13);
  CHECK(op_calls[kWinogradInputGradOp] == 13);
  const auto expected =
      torch::cross_entropy_loss(reference->forward(x.to(torch::kFloat64)), labels);
  expected.backward();
  CHECK(loss.item<double>() == Approx(expected.item<double>()).epsilon(1e-5));
  const auto ours = net->named_parameters();
  const auto theirs = reference->named_parameters();
  for (const auto& p : ours) {
    CAPTURE(p.key());
    const torch::Tensor expected_grad = theirs[p.key()].grad();
    if (expected_grad.abs().max().item<double>() < 1e-12) {
      // The bias of a convolution before a BatchNorm has no effect: its gradient is 0, in fp32
      // what is left of rounding.
      CHECK(p.value().grad().abs().max().item<double>() < 1e-5);
      continue;
    }
    // BatchNorm divides by the batch's deviation, which amplifies fp32's rounding.
    CHECK(relative_error(p.value().grad(), expected_grad) < 1e-3);
  }
}
