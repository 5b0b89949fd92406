// d2l §13.6's ResNet-18 and dptrain's BatchNorm: d2l's shapes and names, PyTorch's BatchNorm
// arithmetic in train and eval mode, fp32 under autocast, and d2l's initialisation.
#include "support/catch.h"

#include <ATen/autocast_mode.h>

#include "model/batch_norm.h"
#include "model/resnet.h"

using namespace dptrain::model;

TEST_CASE("ResNet-18 has d2l's parameter and buffer counts, names and output shape", "[model]") {
  ResNet18 net;
  int64_t params = 0, buffers = 0;
  for (const auto& p : net->parameters()) params += p.numel();
  for (const auto& b : net->buffers()) buffers += b.numel();
  CHECK(params == 11175818);
  CHECK(buffers == 7825);  // 17 BatchNorms: 2 x channels + one step counter each
  const auto named = net->named_parameters();
  CHECK(named["0.weight"].sizes() == torch::IntArrayRef({64, 1, 3, 3}));
  CHECK(named["resnet_block2.0.conv3.weight"].sizes() == torch::IntArrayRef({128, 64, 1, 1}));
  CHECK(named["fc.1.weight"].sizes() == torch::IntArrayRef({10, 512}));
  CHECK(named.find("resnet_block1.0.conv3.weight") == nullptr);  // d2l's first_block: no 1x1
  const auto tracked = net->named_buffers()["resnet_block4.1.bn2.num_batches_tracked"];
  CHECK(tracked.scalar_type() == torch::kLong);
  CHECK(net->forward(torch::rand({3, 1, 28, 28})).sizes() == torch::IntArrayRef({3, 10}));
}

TEST_CASE("ResNet-18 draws conv and linear weights from N(0, init_std^2), as d2l's train()",
          "[model]") {
  torch::manual_seed(1);
  ResNet18 net(/*init_std=*/0.01);
  const auto named = net->named_parameters();
  const torch::Tensor w = named["resnet_block3.0.conv2.weight"];  // 589,824 draws
  CHECK(w.mean().item<double>() == Approx(0).margin(1e-4));
  CHECK(w.std().item<double>() == Approx(0.01).epsilon(0.01));
  CHECK(torch::equal(named["1.weight"], torch::ones({64})));  // BatchNorm: weight 1, bias 0
  CHECK(torch::equal(named["1.bias"], torch::zeros({64})));
  // Biases as PyTorch initialises a conv's: uniform within 1/sqrt(fan_in) (fan_in 9 here).
  CHECK(named["0.bias"].abs().max().item<double>() <= 1.0 / 3);
  CHECK(named["0.bias"].abs().max().item<double>() > 0.1);
}

TEST_CASE("BatchNorm2d computes as PyTorch's in train and eval mode and updates its buffers",
          "[model]") {
  torch::manual_seed(2);
  BatchNorm2d bn(3);
  torch::NoGradGuard no_grad;
  bn->weight.uniform_(0.5, 1.5);
  bn->bias.uniform_(-1, 1);
  torch::Tensor mean = torch::zeros({3}), var = torch::ones({3});
  for (int step = 0; step < 3; ++step) {
    const torch::Tensor x = torch::randn({4, 3, 5, 5}) * 2 + 1;
    const torch::Tensor expected = torch::batch_norm(x, bn->weight, bn->bias, mean, var,
                                                     /*training=*/true, 0.1, 1e-5, false);
    CHECK(torch::allclose(bn->forward(x), expected, 1e-6, 1e-6));
  }
  CHECK(torch::allclose(bn->running_mean, mean));
  CHECK(torch::allclose(bn->running_var, var));
  CHECK(bn->num_batches_tracked.item<int64_t>() == 3);
  bn->eval();
  const torch::Tensor x = torch::randn({2, 3, 5, 5});
  const torch::Tensor expected = (x - mean.view({1, 3, 1, 1})) /
                                     (var.view({1, 3, 1, 1}) + 1e-5).sqrt() *
                                     bn->weight.view({1, 3, 1, 1}) +
                                 bn->bias.view({1, 3, 1, 1});
  CHECK(torch::allclose(bn->forward(x), expected, 1e-5, 1e-6));
  CHECK(bn->num_batches_tracked.item<int64_t>() == 3);  // eval mode counts nothing
}

TEST_CASE("BatchNorm2d computes in fp32 under autocast and answers in the input's dtype",
          "[model][amp]") {
  torch::manual_seed(3);
  BatchNorm2d bn(4);
  const torch::Tensor x = (torch::randn({8, 4, 6, 6}) * 3 + 2).to(torch::kBFloat16);
  BatchNorm2d reference(4);
  at::autocast::set_cpu_enabled(true);
  const torch::Tensor y = bn->forward(x);
  at::autocast::set_cpu_enabled(false);
  CHECK(y.scalar_type() == torch::kBFloat16);
  CHECK(bn->running_mean.scalar_type() == torch::kFloat);
  const torch::Tensor expected = reference->forward(x.to(torch::kFloat));
  CHECK(torch::equal(y, expected.to(torch::kBFloat16)));
  CHECK(torch::equal(bn->running_var, reference->running_var));  // the statistics in fp32
}
