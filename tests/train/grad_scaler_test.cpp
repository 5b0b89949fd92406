// The loss scaler as a state machine over many steps: growth after 2000 clean steps, back-off and
// a skipped step on inf or nan, gradients unscaled before the step, and its state carried over.
#include "train/grad_scaler.h"

#include <limits>
#include "support/catch.h"

using dptrain::train::GradScaler;
using dptrain::train::GradScalerOptions;

namespace {

// One parameter [1, 2] and an SGD step of lr 1 on the loss sum(p * x).
struct Toy {
  torch::Tensor p = torch::tensor({1.0f, 2.0f}).requires_grad_();
  torch::optim::SGD sgd{{p}, torch::optim::SGDOptions(1.0)};

  // One training step as the trainer takes it; returns whether the optimizer stepped.
  bool step(GradScaler& scaler, torch::Tensor x) {
    sgd.zero_grad();
    scaler.scale_loss((p * x).sum()).backward();
    const bool stepped = scaler.step(sgd, {p});
    scaler.update();
    return stepped;
  }
};

const torch::Tensor kClean = torch::tensor({0.5f, 0.25f});
const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST_CASE("the scale starts at 2^16 and doubles after exactly 2000 clean steps", "[train][amp]") {
  GradScaler scaler;
  Toy toy;
  CHECK(scaler.scale() == 65536.0);
  for (int i = 1; i < 2000; ++i) REQUIRE(toy.step(scaler, kClean * 1e-3));
  CHECK(scaler.scale() == 65536.0);
  CHECK(scaler.state().clean_steps == 1999);
  REQUIRE(toy.step(scaler, kClean * 1e-3));
  CHECK(scaler.scale() == 131072.0);
  CHECK(scaler.state().clean_steps == 0);
  for (int i = 0; i < 2000; ++i) REQUIRE(toy.step(scaler, kClean * 1e-3));
  CHECK(scaler.scale() == 262144.0);
}

TEST_CASE("inf or nan gradients skip the step, halve the scale and restart the count",
          "[train][amp]") {
  GradScaler scaler;
  Toy toy;
  for (int i = 0; i < 10; ++i) REQUIRE(toy.step(scaler, kClean));
  const torch::Tensor before = toy.p.detach().clone();
  CHECK_FALSE(toy.step(scaler, torch::tensor({kInf, 1.0f})));
  CHECK(torch::equal(toy.p.detach(), before));  // skipped: untouched
  CHECK(scaler.scale() == 32768.0);
  CHECK(scaler.state().clean_steps == 0);
  CHECK_FALSE(toy.step(scaler, torch::tensor({1.0f, kNan})));
  CHECK(scaler.scale() == 16384.0);
  // Clean again: steps resume, and growth needs 2000 clean steps from here.
  CHECK(toy.step(scaler, kClean));
  CHECK(scaler.state().clean_steps == 1);
}

TEST_CASE("gradients are unscaled before the step and before clipping", "[train][amp]") {
  GradScaler scaler(GradScalerOptions{/*enabled=*/true, /*init_scale=*/1024.0});
  Toy toy;
  toy.sgd.zero_grad();
  scaler.scale_loss((toy.p * kClean).sum()).backward();
  CHECK(torch::allclose(toy.p.grad(), kClean * 1024));
  scaler.unscale({toy.p});
  CHECK(torch::allclose(toy.p.grad(), kClean));
  // step() does not unscale a second time.
  REQUIRE(scaler.step(toy.sgd, {toy.p}));
  CHECK(torch::allclose(toy.p.detach(), torch::tensor({0.5f, 1.75f})));
}

TEST_CASE("a restored scaler goes on as the saved one", "[train][amp]") {
  GradScaler saved;
  Toy toy;
  for (int i = 0; i < 1500; ++i) toy.step(saved, kClean * 1e-3);
  toy.step(saved, torch::tensor({kInf, 0.0f}));
  for (int i = 0; i < 1200; ++i) toy.step(saved, kClean * 1e-3);
  GradScaler restored;
  restored.restore(saved.state());
  CHECK(restored.scale() == 32768.0);
  CHECK(restored.state().clean_steps == 1200);
  Toy a, b;
  for (int i = 0; i < 800; ++i) {
    a.step(saved, kClean * 1e-3);
    b.step(restored, kClean * 1e-3);
  }
  CHECK(saved.scale() == 65536.0);  // grew at 2000 clean steps
  CHECK(restored.scale() == saved.scale());
  CHECK(restored.state().clean_steps == saved.state().clean_steps);
}

TEST_CASE("a disabled scaler passes everything through", "[train][amp]") {
  GradScaler off(GradScalerOptions{/*enabled=*/false});
  Toy toy;
  CHECK(toy.step(off, torch::tensor({kInf, 1.0f})));  // steps even so: fp32 does not skip
  CHECK(torch::isinf(toy.p.detach()).any().item<bool>());
}
