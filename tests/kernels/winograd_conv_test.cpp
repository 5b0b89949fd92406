// dptrain's Winograd 3x3 convolution (kernels/winograd_conv.h): LibTorch's results in float64
// within fp32's rounding, forward and all three gradients; the same bits at any thread count; what
// it refuses; where a non-finite input reaches; and ResNet-18 running it, call by call.
#include "support/catch.h"
#include "support/skip.h"
#include "support/threads.h"

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "core/torch_compat.h"
#include "kernels/cpu_kernels.h"
#include "kernels/winograd_conv.h"
#include "model/resnet.h"

using namespace dptrain::kernels;
using dptrain::testing::at_one_and_two_threads;

namespace {

struct Shape {
  int64_t images, inputs, outputs, height, width;
};

// The largest difference from `expected` (float64) as a share of its largest magnitude.
double relative_error(const torch::Tensor& got, const torch::Tensor& expected) {
  return ((got.to(torch::kFloat64) - expected).abs().max() / expected.abs().max()).item<double>();
}

// A call of one of the three Winograd ops: the tensors it handed the profiler, copied (the
// network frees or reuses them).
struct WinogradCall {
  std::string op;
  std::vector<torch::Tensor> inputs;  // aten::convolution's order: (x, weight, bias) and so on
  torch::Tensor output;
};

// The Winograd ops' calls on this thread (the CPU's backward runs on the caller's thread).
thread_local std::vector<WinogradCall> winograd_calls;

bool is_winograd_op(const std::string& name) {
  return name == kWinogradConvOp || name == kWinogradInputGradOp || name == kWinogradWeightGradOp;
}

// The inputs are read on entering: the op's list of them lives only as long as its
// RECORD_FUNCTION statement.
struct CallInProgress : at::ObserverContext {
  WinogradCall call;
};

std::unique_ptr<at::ObserverContext> enter_call(const at::RecordFunction& fn) {
  if (!is_winograd_op(fn.name())) return nullptr;
  auto entered = std::make_unique<CallInProgress>();
  entered->call.op = fn.name();
  for (const c10::IValue& input : fn.inputs()) {
    entered->call.inputs.push_back(input.toTensor().clone());
  }
  return entered;
}

// LibTorch logs and drops what a callback throws: a call that fails here goes missing, which the
// tests' counts of calls catch.
void leave_call(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (context == nullptr) return;
  WinogradCall& call = static_cast<CallInProgress*>(context)->call;
  call.output = fn.outputs().at(0).toTensor().clone();
  winograd_calls.push_back(std::move(call));
}

// Records the calls on this thread while it lives, a test's failure included.
class RecordingWinogradCalls {
 public:
  RecordingWinogradCalls()
      : handle_(at::addThreadLocalCallback(at::RecordFunctionCallback(enter_call, leave_call)
                                               .needsInputs(true)
                                               .needsOutputs(true))) {
    winograd_calls.clear();
  }
  ~RecordingWinogradCalls() { at::removeCallback(handle_); }
  RecordingWinogradCalls(const RecordingWinogradCalls&) = delete;
  RecordingWinogradCalls& operator=(const RecordingWinogradCalls&) = delete;

 private:
  at::CallbackHandle handle_;
};

template <typename Body>
void recording_winograd_calls(Body body) {
  const RecordingWinogradCalls recording;
  body();
}

// The recorded calls of `op` for which `matches` holds.
std::vector<const WinogradCall*> calls_where(
    const std::string& op, const std::function<bool(const WinogradCall&)>& matches) {
  std::vector<const WinogradCall*> found;
  for (const auto& call : winograd_calls) {
    if (call.op == op && matches(call)) found.push_back(&call);
  }
  return found;
}

std::vector<const WinogradCall*> calls_of(const std::string& op) {
  return calls_where(op, [](const WinogradCall&) { return true; });
}

// What float64 LibTorch gives for the recorded call's own tensors: conv2d's output, or one of
// its gradients by autograd (stride 1, padding 1).
torch::Tensor float64_result(const WinogradCall& call) {
  std::vector<torch::Tensor> in;
  for (const auto& t : call.inputs) in.push_back(t.to(torch::kFloat64));
  if (call.op == kWinogradConvOp) {  // (x, weight, bias or the empty stand-in)
    return torch::conv2d(in[0], in[1], in[2].numel() > 0 ? in[2] : torch::Tensor(), 1, 1);
  }
  const torch::Tensor& grad = in[0];
  if (call.op == kWinogradInputGradOp) {  // (grad, weight)
    const torch::Tensor& weight = in[1];
    const auto x =
        torch::zeros({grad.size(0), weight.size(1), grad.size(2), grad.size(3)}, grad.options())
            .requires_grad_();
    torch::conv2d(x, weight, {}, 1, 1).backward(grad);
    return x.grad();
  }
  const torch::Tensor& x = in[1];  // the weight gradient's (grad, x)
  const auto weight =
      torch::zeros({grad.size(1), x.size(1), 3, 3}, grad.options()).requires_grad_();
  torch::conv2d(x, weight, {}, 1, 1).backward(grad);
  return weight.grad();
}

}  // namespace

TEST_CASE("the Winograd convolution equals LibTorch's forward and in all three gradients",
          "[kernels]") {
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
          "[kernels]") {
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
    recording_winograd_calls([&] {
      const auto y = winograd_conv(input, weight, torch::Tensor());
      grad = torch::autograd::grad({y.sum()}, {of_weight ? weight : input})[0];
    });
    CHECK(grad.sizes() == (of_weight ? weight : input).sizes());
    CHECK(calls_of(kWinogradConvOp).size() == 1);
    CHECK(calls_of(kWinogradWeightGradOp).size() == (of_weight ? 1 : 0));
    CHECK(calls_of(kWinogradInputGradOp).size() == (of_weight ? 0 : 1));
  }
}

TEST_CASE("the Winograd convolution has the same bits at any thread count and batch split",
          "[kernels]") {
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
  const auto [one, two, used] = at_one_and_two_threads([&] { return run(x, probe); });
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
          "[kernels]") {
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

TEST_CASE("winograd_conv refuses what it does not compute", "[kernels]") {
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
    "ResNet-18 runs its 13 stride-1 3x3 convolutions in the Winograd kernels and each call gives "
    "float64's result for its own tensors",
    "[kernels]") {
  // Call by call: the whole network's gradients cannot be held to a float64 copy's. Where a
  // ReLU's input lies within fp32's rounding of 0, fp32 now and then puts it on the other side of
  // 0, and each gradient behind it moves by that element's share: in a batch of 3, by 1e-2 to 0.24
  // of some parameters' largest gradient, with LibTorch's own convolutions as with these, and
  // differently with each compiler. The loss and fc's gradients, continuous where a ReLU turns,
  // are held to float64's for the whole network; the calls' tensors, to each other.
  torch::manual_seed(6);
  dptrain::model::ResNet18 net(/*init_std=*/0.05);
  auto reference = std::dynamic_pointer_cast<dptrain::model::ResNet18Impl>(net->clone());
  reference->to(torch::kFloat64);  // float64: LibTorch's convolutions throughout
  const auto x = torch::randn({3, 1, 28, 28});
  const auto labels = torch::tensor({1, 4, 7});
  torch::Tensor loss;
  recording_winograd_calls([&] {
    loss = torch::cross_entropy_loss(net->forward(x), labels);
    loss.backward();
  });
  // The stages' convolutions but the 3 strided ones (and the stem and the 3 1x1 shortcuts).
  CHECK(calls_of(kWinogradConvOp).size() == 13);
  CHECK(calls_of(kWinogradWeightGradOp).size() == 13);
  CHECK(calls_of(kWinogradInputGradOp).size() == 13);
  const auto expected =
      torch::cross_entropy_loss(reference->forward(x.to(torch::kFloat64)), labels);
  expected.backward();
  CHECK(loss.item<double>() == Approx(expected.item<double>()).epsilon(1e-5));
  const auto ours = net->named_parameters();
  const auto theirs = reference->named_parameters();
  for (const std::string name : {"fc.1.weight", "fc.1.bias"}) {
    CAPTURE(name);
    CHECK(relative_error(ours[name].grad(), theirs[name].grad()) < 1e-5);
  }
  for (const auto& call : winograd_calls) {
    CAPTURE(call.op, call.inputs[0].sizes());
    // As the single convolutions' test above, over up to 4,608 products (512 channels).
    CHECK(relative_error(call.output, float64_result(call)) < 5e-6);
  }
  // Each forward call's backward pass: its weight gradient from the same input, its input
  // gradient from the same weight, both from the same output gradient, and the weight gradient is
  // what autograd hands that weight. (Tensors of the same values are the same tensor here: the
  // inputs are random.)
  for (const auto& forward : calls_of(kWinogradConvOp)) {
    const torch::Tensor& input = forward->inputs[0];
    const torch::Tensor& weight = forward->inputs[1];
    CAPTURE(input.sizes());
    const auto weight_grads = calls_where(kWinogradWeightGradOp, [&](const WinogradCall& call) {
      return torch::equal(call.inputs[1], input);
    });
    REQUIRE(weight_grads.size() == 1);
    const torch::Tensor& grad = weight_grads[0]->inputs[0];
    CHECK(calls_where(kWinogradInputGradOp, [&](const WinogradCall& call) {
            return torch::equal(call.inputs[0], grad) && torch::equal(call.inputs[1], weight);
          }).size() == 1);
    std::vector<torch::Tensor> parameters;
    for (const auto& p : net->parameters()) {
      if (p.sizes() == weight.sizes() && torch::equal(p, weight)) parameters.push_back(p);
    }
    REQUIRE(parameters.size() == 1);
    CHECK(torch::equal(parameters[0].grad(), weight_grads[0]->output));
  }
}
