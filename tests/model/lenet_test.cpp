#include "support/catch.h"

#include <algorithm>
#include <functional>
#include <string>

#include <ATen/record_function.h>

#include "core/error.h"
#include "kernels/cpu_kernels.h"
#include "model/lenet.h"
#include "model/registry.h"

using namespace dptrain::model;

namespace {

// Whether `body` runs the op `name` on this thread: a RecordFunction callback, as dptrain info
// counts FLOPs (model/summary.cpp).
thread_local const char* dense_op_wanted = nullptr;
thread_local bool dense_op_seen = false;
bool runs_op(const char* name, const std::function<void()>& body) {
  dense_op_wanted = name;
  dense_op_seen = false;
  const auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(
      [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        if (std::string(fn.name()) == dense_op_wanted) dense_op_seen = true;
        return nullptr;
      }));
  body();
  at::removeCallback(handle);
  return dense_op_seen;
}

int64_t count_parameters(torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

// d2l's lenet() written with plain torch ops, for comparison with the module's CPU path.
torch::Tensor reference_forward(LeNet& net, torch::Tensor x) {
  auto p = net->named_parameters();
  x = torch::avg_pool2d(torch::relu(torch::conv2d(x, p["0.weight"], p["0.bias"])), 2);
  x = torch::avg_pool2d(torch::relu(torch::conv2d(x, p["3.weight"], p["3.bias"])), 2);
  x = x.reshape({x.size(0), -1});
  x = torch::relu(torch::linear(x, p["7.weight"], p["7.bias"]));
  return torch::linear(x, p["9.weight"], p["9.bias"]);
}

}  // namespace

TEST_CASE("LeNet maps a batch of 28x28 images to 10 logits", "[model]") {
  LeNet net;
  CHECK(net->forward(torch::rand({5, 1, 28, 28})).sizes() == torch::IntArrayRef({5, 10}));
}

TEST_CASE("LeNet has d2l's exact parameter count and shapes", "[model]") {
  LeNet net;
  CHECK(count_parameters(*net) == 129068);
  auto p = net->named_parameters();
  CHECK(p["0.weight"].sizes() == torch::IntArrayRef({20, 1, 3, 3}));
  CHECK(p["3.weight"].sizes() == torch::IntArrayRef({50, 20, 5, 5}));
  CHECK(p["7.weight"].sizes() == torch::IntArrayRef({128, 800}));
  CHECK(p["9.weight"].sizes() == torch::IntArrayRef({10, 128}));
}

TEST_CASE("LeNet's weights are drawn from N(0, init_std^2) and its biases are zero", "[model]") {
  torch::manual_seed(0);
  LeNet net(/*init_std=*/0.01);
  auto p = net->named_parameters();
  for (const char* bias : {"0.bias", "3.bias", "7.bias", "9.bias"}) {
    CHECK(p[bias].abs().max().item<float>() == 0.0f);
  }
  const auto w = p["7.weight"];  // 102,400 draws: mean and std within a few percent
  CHECK(std::abs(w.mean().item<double>()) < 1e-4);
  CHECK(w.std().item<double>() == Approx(0.01).epsilon(0.02));
}

TEST_CASE("the CPU compute path gives d2l's forward and gradients", "[model]") {
  torch::manual_seed(1);
  LeNet net(/*init_std=*/0.1);
  const auto x = torch::rand({8, 1, 28, 28});
  const auto fast = net->forward(x);
  const auto reference = reference_forward(net, x);
  CHECK(torch::allclose(fast, reference, /*rtol=*/1e-5, /*atol=*/1e-6));

  const auto grads = [&](const torch::Tensor& out) {
    net->zero_grad();
    out.pow(2).sum().backward();
    std::vector<torch::Tensor> g;
    for (const auto& p : net->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  const auto g_fast = grads(net->forward(x));
  const auto g_reference = grads(reference_forward(net, x));
  for (size_t i = 0; i < g_fast.size(); ++i) {
    CHECK(torch::allclose(g_fast[i], g_reference[i], /*rtol=*/1e-4, /*atol=*/1e-6));
  }
}

TEST_CASE("dense() equals torch::linear, and so do its gradients", "[model]") {
  torch::manual_seed(3);
  // A strided input (every other column), inputs that do and do not need a gradient, and LeNet's
  // narrow and wide outputs.
  const auto x_wide = torch::randn({7, 60});
  for (const auto& [input_grad, outputs] :
       {std::pair{true, 4}, {false, 4}, {true, 20}, {false, 20}}) {
    CAPTURE(input_grad, outputs);
    const auto probe = torch::randn({7, outputs});
    std::vector<torch::Tensor> grads[2];
    torch::Tensor out[2];
    for (int reference = 0; reference < 2; ++reference) {
      const auto x = x_wide.slice(1, 0, 60, 2).detach().requires_grad_(input_grad);
      torch::manual_seed(4);
      const auto w = torch::randn({outputs, 30}).requires_grad_();
      const auto b = torch::randn({outputs}).requires_grad_();
      if (reference) {
        out[1] = torch::linear(x, w, b);
      } else {
        // oneDNN's inner product, not a 1x1 convolution nor the system BLAS.
        CHECK(runs_op("aten::mkldnn_linear", [&] { out[0] = dptrain::kernels::dense(x, w, b); }));
      }
      (out[reference] * probe).sum().backward();
      grads[reference] = {w.grad(), b.grad(), input_grad ? x.grad() : torch::zeros({7, 30})};
    }
    CHECK(torch::allclose(out[0], out[1], 1e-5, 1e-5));
    for (size_t i = 0; i < 3; ++i) CHECK(torch::allclose(grads[0][i], grads[1][i], 1e-5, 1e-5));
  }
}

TEST_CASE("the registry builds LeNet by name and refuses unknown names", "[model]") {
  dptrain::config::ModelConfig config;
  auto model = make_model(config);
  CHECK(model.forward(torch::rand({2, 1, 28, 28})).sizes() == torch::IntArrayRef({2, 10}));
  const auto names = model_names();  // other tests may have registered more
  CHECK(std::find(names.begin(), names.end(), "lenet") != names.end());
  config.name = "vgg";
  CHECK_THROWS_AS(make_model(config), dptrain::core::Error);
}

TEST_CASE("a registered model is built by its name", "[model]") {
  register_model("tiny-linear", [](const dptrain::config::ModelConfig&) {
    return torch::nn::AnyModule(torch::nn::Linear(784, 10));
  });
  dptrain::config::ModelConfig config;
  config.name = "tiny-linear";
  auto model = make_model(config);
  CHECK(model.forward(torch::rand({3, 784})).sizes() == torch::IntArrayRef({3, 10}));
  const auto names = model_names();
  CHECK(std::find(names.begin(), names.end(), "tiny-linear") != names.end());
}
