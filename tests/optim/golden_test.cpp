// dptrain's optimizers and learning-rate schedules against PyTorch's own: 12 steps of a tiny
// float64 model (Linear(4, 3) under cross-entropy), the rates and parameters PyTorch 1.13 computed
// for each case in data/pytorch_golden.json (made by make_golden.py beside this file). Each case
// is read through the real config loader, as an experiment file's keys.
#include <nlohmann/json.hpp>

#include "support/catch.h"

#include "config/load.h"
#include "core/error.h"
#include "core/fs.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"

namespace {

using nlohmann::json;

json golden() {
  return json::parse(dptrain::core::read_text_file(std::filesystem::path(DPTRAIN_SOURCE_DIR) /
                                                   "tests/optim/data/pytorch_golden.json"));
}

torch::Tensor doubles(const json& values) {
  return torch::tensor(values.get<std::vector<double>>(), torch::kFloat64);
}

dptrain::config::Config config_of(const json& c) {
  const json experiment = {{"optimizer", c.at("optimizer")}, {"scheduler", c.at("scheduler")}};
  return dptrain::config::resolve_config(experiment.dump(), "golden case", {}, {"lenet"});
}

// Relative to the tensor's size, so that values near zero do not inflate it.
double max_relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

}  // namespace

TEST_CASE("optimizers and schedules take PyTorch 1.13's steps on a tiny float64 model", "[optim]") {
  const json g = golden();
  const int64_t steps = g.at("steps").get<int64_t>();
  const torch::Tensor x = doubles(g.at("x")).view({-1, 4});
  const torch::Tensor y = torch::tensor(g.at("y").get<std::vector<int64_t>>(), torch::kInt64);
  for (const json& c : g.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    INFO("case " << name);
    const dptrain::config::Config config = config_of(c);
    torch::Tensor weight = doubles(g.at("init").at("weight")).view({3, 4}).requires_grad_();
    torch::Tensor bias = doubles(g.at("init").at("bias")).requires_grad_();
    auto optimizer = dptrain::optim::make_optimizer(config.optimizer, {weight, bias});
    const dptrain::optim::LearningRateSchedule schedule(config.scheduler, config.optimizer.lr,
                                                        /*total_steps=*/steps,
                                                        /*steps_per_epoch=*/steps);
    for (int64_t t = 0; t < steps; ++t) {
      INFO("step " << t);
      const double lr = schedule.at(t);
      CHECK(lr == Approx(c.at("lr").at(t).get<double>()).epsilon(1e-13));
      dptrain::optim::set_learning_rate(*optimizer, lr);
      optimizer->zero_grad();
      torch::nn::functional::cross_entropy(torch::addmm(bias, x, weight.t()), y).backward();
      optimizer->step();
      const json& expected = c.at("params").at(t);
      CHECK(max_relative_difference(weight.detach().flatten(), doubles(expected.at(0))) < 1e-13);
      CHECK(max_relative_difference(bias.detach(), doubles(expected.at(1))) < 1e-13);
    }
  }
}

TEST_CASE("a warm-up in epochs counts the epoch's optimizer steps", "[optim]") {
  dptrain::config::SchedulerConfig c;
  c.warmup_epochs = 2;
  const dptrain::optim::LearningRateSchedule schedule(c, /*lr=*/0.4, /*total_steps=*/30,
                                                      /*steps_per_epoch=*/5);
  CHECK(schedule.warmup_steps() == 10);
  CHECK(schedule.at(0) == Approx(0.04));
  CHECK(schedule.at(9) == Approx(0.4));
  CHECK(schedule.at(29) == Approx(0.4));
}

TEST_CASE("a schedule that does not fit in the run is a config error naming the key", "[optim]") {
  using dptrain::core::Error;
  dptrain::config::SchedulerConfig c;
  c.name = dptrain::config::SchedulerName::kCosine;
  c.warmup_steps = 20;
  REQUIRE_THROWS_MATCHES(
      dptrain::optim::LearningRateSchedule(c, 0.1, /*total_steps=*/20, /*steps_per_epoch=*/10),
      Error,
      Catch::Matchers::Message(
          "scheduler.warmup_steps: 20 warm-up steps leave none to anneal in a run of 20 "
          "optimizer steps"));
  // step and none would never run at lr; one step fewer of warm-up reaches it on the last step.
  for (const auto name :
       {dptrain::config::SchedulerName::kStep, dptrain::config::SchedulerName::kNone}) {
    c.name = name;
    c.warmup_epochs = 3;
    REQUIRE_THROWS_MATCHES(
        dptrain::optim::LearningRateSchedule(c, 0.1, /*total_steps=*/20, /*steps_per_epoch=*/10),
        Error,
        Catch::Matchers::Message("scheduler.warmup_epochs: 30 warm-up steps leave no step at the "
                                 "full rate in a run of 20 optimizer steps"));
    c.warmup_epochs = 0;
    c.warmup_steps = 20;
    CHECK_THROWS_AS(dptrain::optim::LearningRateSchedule(c, 0.1, 20, 10), Error);
    c.warmup_steps = 19;
    CHECK(dptrain::optim::LearningRateSchedule(c, 0.1, 20, 10).at(18) == Approx(0.1));
    c.warmup_steps = 20;
  }
  c.name = dptrain::config::SchedulerName::kOnecycle;
  c.warmup_steps = 0;
  REQUIRE_THROWS_MATCHES(
      dptrain::optim::LearningRateSchedule(c, 0.1, /*total_steps=*/3, /*steps_per_epoch=*/3), Error,
      Catch::Matchers::Message("scheduler.name: onecycle's rising phase of 0 steps leaves a "
                               "phase without steps in a run of 3 optimizer steps"));
}
