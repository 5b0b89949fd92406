#include "support/catch.h"

#include "kernels/relu_pool.h"

using namespace dptrain::kernels;

TEST_CASE("relu_avg_pool2 gives LibTorch's ReLU and average pooling bit for bit, both ways",
          "[kernels]") {
  // LeNet's second block, odd sides whose last row and column the pooling drops, and an input in
  // the standard layout.
  const std::vector<std::array<int64_t, 4>> shapes = {// images, channels, height, width
                                                      {6, 50, 9, 9},
                                                      {3, 7, 6, 5},
                                                      {2, 16, 2, 3}};
  for (const bool channels_last : {true, false}) {
    for (const auto& [images, channels, height, width] : shapes) {
      CAPTURE(channels_last, images, channels, height, width);
      torch::manual_seed(static_cast<uint64_t>(channels + height));
      torch::Tensor x = torch::randn({images, channels, height, width});
      if (channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
      x.index_put_({0, 0, 0, 0}, 0.0f);  // ReLU's edge: zero passes no gradient
      auto probe = torch::randn({images, channels, height / 2, width / 2});
      probe.index_put_({0, 0, 0, 0}, -0.0f);  // avg_pool2d's backward turns it into +0
      const auto run = [&](bool fused) {
        const auto input = x.detach().clone().requires_grad_();
        const auto out = fused ? relu_avg_pool2(input) : torch::avg_pool2d(torch::relu(input), 2);
        (out * probe).sum().backward();
        return std::pair{out.detach(), input.grad()};
      };
      REQUIRE(relu_avg_pool2_applies(x));
      const auto [out, grad] = run(true);
      const auto [reference_out, reference_grad] = run(false);
      CHECK(out.is_contiguous(torch::MemoryFormat::ChannelsLast));
      // Bits, not values: torch::equal would take -0 for +0.
      CHECK(torch::equal(out.contiguous().view(torch::kInt32),
                         reference_out.contiguous().view(torch::kInt32)));
      CHECK(torch::equal(grad.contiguous().view(torch::kInt32),
                         reference_grad.contiguous().view(torch::kInt32)));
      torch::NoGradGuard no_grad;
      CHECK(torch::equal(relu_avg_pool2(x).contiguous().view(torch::kInt32),
                         reference_out.contiguous().view(torch::kInt32)));
    }
  }
}

TEST_CASE("relu_avg_pool2 leaves what it cannot compute to LibTorch", "[kernels]") {
  CHECK(relu_avg_pool2_applies(torch::rand({1, 1, 2, 2})));
  CHECK_FALSE(relu_avg_pool2_applies(torch::rand({1, 1, 1, 4})));  // no 2x2 window
  CHECK_FALSE(relu_avg_pool2_applies(torch::rand({4, 4})));        // not an image batch
  CHECK_FALSE(relu_avg_pool2_applies(torch::rand({1, 1, 4, 4}).to(torch::kBFloat16)));  // autocast
}
