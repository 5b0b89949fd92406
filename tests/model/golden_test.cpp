// LeNet against PyTorch's own numbers: fixed weights and inputs, one forward, loss, backward and
// SGD step. The expected figures were computed with PyTorch 1.13 (torch.nn.functional ops, as
// d2l's lenet() uses them) from the same formulas as fill() and input() below.
#include "support/catch.h"

#include "model/lenet.h"

using dptrain::model::LeNet;

namespace {

// sin(i * 0.37 + k) * 0.1, computed in double and stored as float, as the Python side did.
torch::Tensor fill(torch::IntArrayRef shape, int k) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return (torch::sin(torch::arange(n, torch::kFloat64) * 0.37 + k) * 0.1)
      .to(torch::kFloat32)
      .reshape(shape);
}

torch::Tensor input() {
  return (torch::cos(torch::arange(4 * 784, torch::kFloat64) * 0.11) * 0.5 + 0.5)
      .to(torch::kFloat32)
      .reshape({4, 1, 28, 28});
}

struct Expected {
  const char* name;
  double sum_after_step;
  double grad_abs_sum;
};

}  // namespace

TEST_CASE("LeNet's forward, loss, gradients and SGD step match PyTorch's numbers", "[model]") {
  LeNet net;
  const std::vector<std::string> order = {"0.weight", "0.bias", "3.weight", "3.bias",
                                          "7.weight", "7.bias", "9.weight", "9.bias"};
  auto params = net->named_parameters();
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < order.size(); ++i) {
      auto& p = params[order[i]];
      p.copy_(fill(p.sizes(), static_cast<int>(i)));
    }
  }
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.2));
  const auto logits = net->forward(input());
  const auto loss =
      torch::nn::functional::cross_entropy(logits, torch::tensor({3, 0, 9, 5}, torch::kInt64));
  loss.backward();
  sgd.step();

  const std::vector<double> row0 = {
      0.2604455053806305,   -0.03429022431373596, 0.1434001624584198,   0.13389189541339874,
      -0.03525346517562866, 0.24334099888801575,  -0.23084090650081635, 0.2829909026622772,
      -0.38208770751953125, 0.2657029330730438};
  for (int j = 0; j < 10; ++j) CHECK(logits[0][j].item<double>() == Approx(row0[j]).margin(1e-6));
  CHECK(loss.item<double>() == Approx(2.1638355255126953).epsilon(1e-6));

  const std::vector<Expected> expected = {
      {"0.weight", 0.5122565296505854, 0.012053970587544427},
      {"0.bias", 0.28222303884103894, 0.002654939205967821},
      {"3.weight", 0.307450595282603, 8.056144025913978},
      {"3.bias", -0.043560154270380735, 0.14261921413708478},
      {"7.weight", 50.790847801820334, 481.71532890136587},
      {"7.bias", 0.301427930011414, 1.7335105007514358},
      {"9.weight", 0.3286191447332385, 5.950545545259956},
      {"9.bias", 0.3599352343007922, 1.0796245262026787},
  };
  for (const auto& e : expected) {
    INFO(e.name);
    const auto& p = params[e.name];
    CHECK(p.to(torch::kFloat64).sum().item<double>() == Approx(e.sum_after_step).margin(1e-5));
    // conv1's gradient sums the most float32 terms, in another order than PyTorch's default
    // kernels: measured 3e-5 relative apart, everything else within 1e-6.
    CHECK(p.grad().to(torch::kFloat64).abs().sum().item<double>() ==
          Approx(e.grad_abs_sum).epsilon(1e-4));
  }
}
