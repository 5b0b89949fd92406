// The validation hold-out: its size, that it and the rest cover the training set once, and that
// the seed alone decides it.
#include "data/holdout.h"

#include "support/catch.h"

#include "core/error.h"
#include "support/datasets.h"

using namespace dptrain;

namespace {

std::vector<int64_t> all_indices(const data::Dataset& d) {
  std::vector<int64_t> rows(static_cast<size_t>(d.size()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  return testing::indices_in(d.get_batch(rows));
}

}  // namespace

TEST_CASE("a tenth held out: 60 of 600, disjoint from the rest, in file order", "[data]") {
  const auto train = testing::counting_dataset(600);
  const data::HeldOut held = data::hold_out(train, 0.1, /*seed=*/42);
  const auto val = all_indices(*held.val);
  const auto rest = all_indices(*held.train);
  CHECK(val.size() == 60);
  CHECK(rest.size() == 540);
  CHECK(std::is_sorted(val.begin(), val.end()));
  CHECK(std::is_sorted(rest.begin(), rest.end()));
  std::vector<int64_t> both = val;
  both.insert(both.end(), rest.begin(), rest.end());
  std::sort(both.begin(), both.end());
  std::vector<int64_t> expected(600);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int64_t>(i);
  CHECK(both == expected);
  // Labels travel with their images (label = index % 10).
  const auto batch = held.val->get_batch({0, 1, 2});
  for (int64_t k = 0; k < 3; ++k) CHECK(batch.labels[k].item<int64_t>() == val[k] % 10);
}

TEST_CASE("the seed alone picks the hold-out", "[data]") {
  const auto train = testing::counting_dataset(600);
  const auto a = all_indices(*data::hold_out(train, 0.1, 42).val);
  CHECK(all_indices(*data::hold_out(train, 0.1, 42).val) == a);
  CHECK(all_indices(*data::hold_out(train, 0.1, 43).val) != a);
}

TEST_CASE("a hold-out that leaves either part empty is a config error", "[data]") {
  const auto train = testing::counting_dataset(600);
  CHECK_THROWS_MATCHES(
      data::hold_out(train, 0.0001, 42), core::Error,
      Catch::Matchers::Message(
          "data.val_split: 0.0001 of 600 training samples leaves no validation set"));
  CHECK_THROWS_MATCHES(
      data::hold_out(train, 0.9999, 42), core::Error,
      Catch::Matchers::Message(
          "data.val_split: 0.9999 of 600 training samples leaves nothing to train on"));
}
