// Early stopping's verdicts over a sequence of evaluations: improvement by more than min_delta,
// patience, the direction each figure improves in, and values that are not finite.
#include "train/early_stopping.h"

#include <limits>
#include "support/catch.h"

using dptrain::config::EarlyStoppingConfig;
using dptrain::train::EarlyStopping;

namespace {

EarlyStoppingConfig watching(const std::string& monitor, int64_t patience, double min_delta) {
  EarlyStoppingConfig c;
  c.enabled = true;
  c.monitor = *dptrain::config::choice_named<dptrain::config::Monitor>(monitor);
  c.patience = patience;
  c.min_delta = min_delta;
  return c;
}

// Feeds the values as epochs 1, 2, ...; returns the epoch that stopped (0: none) and its reason.
std::pair<int64_t, std::string> first_stop(EarlyStopping& stopper,
                                           const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const auto verdict = stopper.update(static_cast<int64_t>(i + 1), values[i]);
    if (verdict.stop) return {static_cast<int64_t>(i + 1), verdict.reason};
  }
  return {0, ""};
}

}  // namespace

TEST_CASE("a loss must fall by more than min_delta, patience evaluations in a row", "[train]") {
  EarlyStopping stopper(watching("train_loss", 2, 0.01));
  CHECK_FALSE(stopper.maximize());
  // 0.95 beats 1.0 by 0.05; 0.945 beats 0.95 by less than 0.01, as does 0.941 later.
  const auto [epoch, reason] = first_stop(stopper, {1.0, 0.95, 0.945, 0.96, 0.5});
  CHECK(epoch == 4);
  CHECK(reason == "train_loss did not improve on 0.9500 (epoch 2) for 2 evaluations");
  CHECK(stopper.best_epoch() == 2);
  CHECK(stopper.best_value() == 0.95);
}

TEST_CASE("an improvement resets the count", "[train]") {
  EarlyStopping stopper(watching("test_loss", 2, 0));
  // Never two evaluations in a row without a new best.
  CHECK(first_stop(stopper, {1.0, 1.1, 0.9, 1.0, 0.8, 0.85, 0.7}).first == 0);
  CHECK(stopper.best_epoch() == 7);
}

TEST_CASE("accuracies improve upwards, and mode overrides the guess", "[train]") {
  EarlyStopping acc(watching("val_acc", 1, 0));
  CHECK(acc.maximize());
  CHECK(first_stop(acc, {0.5, 0.6, 0.55}).first == 3);
  CHECK(acc.best_value() == 0.6);

  EarlyStoppingConfig loss_up = watching("val_loss", 1, 0);
  loss_up.mode = dptrain::config::MonitorMode::kMax;
  EarlyStopping odd(loss_up);
  CHECK(odd.maximize());
  CHECK(first_stop(odd, {0.5, 0.6, 0.55}).first == 3);
}

TEST_CASE("a value that is not finite stops at once, unless told otherwise", "[train]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EarlyStopping stopper(watching("train_loss", 5, 0));
  const auto [epoch, reason] = first_stop(stopper, {2.0, 1.5, nan});
  CHECK(epoch == 3);
  CHECK(reason == "train_loss is nan at epoch 3");
  CHECK(stopper.best_epoch() == 2);

  EarlyStopping on_inf(watching("val_loss", 5, 0));
  CHECK(first_stop(on_inf, {inf}).second == "val_loss is inf at epoch 1");

  // Counted as no improvement instead.
  EarlyStoppingConfig tolerant = watching("train_loss", 2, 0);
  tolerant.stop_on_non_finite = false;
  EarlyStopping patient(tolerant);
  CHECK(first_stop(patient, {2.0, nan, nan}).first == 3);
  CHECK(patient.best_value() == 2.0);
}

TEST_CASE(
    "a watch without restore_best drops the best weights a checkpoint brought: it would not keep "
    "them up to date, and a later resume with restore_best would restore them under another "
    "epoch's name",
    "[train]") {
  EarlyStoppingConfig config = watching("train_loss", 2, 0.01);
  const EarlyStopping::State state{1, 0.5, 0};
  const std::vector<torch::Tensor> weights = {torch::ones({2})};

  config.restore_best = false;
  dptrain::train::EarlyStopWatch dropping(config, false);
  dropping.restore(state, weights);
  CHECK(dropping.best_weights().empty());
  CHECK(dropping.state().best_epoch == 1);

  config.restore_best = true;
  dptrain::train::EarlyStopWatch keeping(config, false);
  keeping.restore(state, weights);
  REQUIRE(keeping.best_weights().size() == 1);
  CHECK(keeping.best_weights()[0].equal(weights[0]));
}
