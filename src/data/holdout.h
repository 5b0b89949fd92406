// A validation set held out of the training set (data.val_split), the same for every rank and
// every run with the same seed, so that early stopping watches data the model does not train on.
#pragma once

#include <memory>

#include "data/dataset.h"

namespace dptrain::data {

struct HeldOut {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> val;
};

// Moves round(fraction * N) samples of `train`, picked by a permutation seeded from `seed`, into
// `val`; both keep their samples in file order, as views of `train` (nothing is copied). Throws a
// config error naming data.val_split when that leaves either part empty.
HeldOut hold_out(const std::shared_ptr<const Dataset>& train, double fraction, int64_t seed);

}  // namespace dptrain::data
