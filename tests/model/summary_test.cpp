// `dptrain info --model`'s figures: counts from the modules, FLOPs from the ops LibTorch runs.
#include "support/catch.h"

#include "config/config.h"
#include "model/registry.h"
#include "model/summary.h"

using namespace dptrain;

namespace {

model::ModelSummary summary_of(const std::string& name) {
  config::ModelConfig config;
  config.name = name;
  torch::nn::AnyModule net = model::make_model(config);
  return model::summarize(net, {1, 28, 28});
}

}  // namespace

TEST_CASE("a model's summary counts LeNet's multiply-adds exactly", "[model]") {
  const model::ModelSummary s = summary_of("lenet");
  CHECK(s.parameters == 129068);
  CHECK(s.buffers == 0);
  CHECK(s.output_shape == std::vector<int64_t>{10});
  // conv 26x26x20 outputs of 9 taps, conv 9x9x50 of 500, linear 800->128 and 128->10; x2.
  const int64_t expected = 2 * (26 * 26 * 20 * 9 + 9 * 9 * 50 * 500 + 800 * 128 + 128 * 10);
  CHECK(s.convolution_flops + s.matmul_flops == expected);
  REQUIRE(s.layers.size() == 4);
  CHECK(s.layers[1].name == "3");
  CHECK(s.layers[1].type == "Conv2d");
  CHECK(s.layers[1].parameters == 20 * 50 * 25 + 50);
}

TEST_CASE("a model's summary lists ResNet-18's blocks with their parameters and buffers",
          "[model]") {
  const model::ModelSummary s = summary_of("resnet18");
  CHECK(s.parameters == 11175818);
  CHECK(s.buffers == 7825);
  REQUIRE(s.layers.size() == 12);  // stem conv and BatchNorm, 8 blocks, fc's Flatten and Linear
  CHECK(s.layers[2].name == "resnet_block1.0");
  CHECK(s.layers[2].type == "Residual");
  CHECK(s.layers[1].buffers == 64 + 64 + 1);  // running mean and variance, the step counter
  int64_t listed = 0;
  for (const auto& layer : s.layers) listed += layer.parameters;
  CHECK(listed == s.parameters);
  // The stem alone: 28x28x64 outputs of 9 taps, twice.
  CHECK(s.convolution_flops > 2 * 28 * 28 * 64 * 9);
  CHECK(s.convolution_flops == Approx(911.59e6).epsilon(1e-4));
  CHECK(s.matmul_flops == 2 * 512 * 10);
}
