// The suite's own comparison of parameter lists: a NaN must count as a difference, or a resume
// test would pass a resumed run whose parameters went NaN beside finite ones that match.
#include "support/runs.h"

#include <limits>

#include "support/catch.h"

using namespace dptrain::testing;

TEST_CASE(
    "max_relative_difference counts a NaN on either side as an infinite difference, and equal "
    "tensors as equal, zeros and infinities included",
    "[support]") {
  const auto nan = std::numeric_limits<float>::quiet_NaN();
  const auto inf = std::numeric_limits<double>::infinity();
  const torch::Tensor two = torch::tensor({1.0F, 2.0F});
  const torch::Tensor wider = torch::tensor({1.0F, 2.5F});
  const torch::Tensor with_nan = torch::tensor({1.0F, nan});
  CHECK(max_relative_difference({two}, {two.clone()}) == 0);
  CHECK(max_relative_difference({torch::zeros({3})}, {torch::zeros({3})}) == 0);  // not 0/0
  const torch::Tensor infinite = torch::tensor({1.0F, std::numeric_limits<float>::infinity()});
  CHECK(max_relative_difference({infinite}, {infinite.clone()}) == 0);  // not inf - inf
  CHECK(max_relative_difference({two}, {wider}) == Approx(0.2));        // 0.5 of b's largest, 2.5
  CHECK(max_relative_difference({with_nan}, {two}) == inf);
  CHECK(max_relative_difference({two}, {with_nan}) == inf);
  CHECK(max_relative_difference({with_nan}, {with_nan.clone()}) == inf);
  // A NaN in the first pair is not hidden by a finite difference in the second.
  CHECK(max_relative_difference({with_nan, two}, {two, wider}) == inf);
  CHECK(max_relative_difference({two, with_nan}, {wider, two}) == inf);
}
