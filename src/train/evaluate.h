// Test-set loss and accuracy for the backend's current parameters, summed over every batch (and,
// for multi-process backends, over every rank's shard) before dividing.
#pragma once

#include "data/loader.h"
#include "parallel/backend.h"

namespace dptrain::train {

struct EvalResult {
  double loss = 0;      // mean cross-entropy per sample
  double accuracy = 0;  // fraction classified correctly
  int64_t samples = 0;
};

EvalResult evaluate(parallel::Backend& backend, data::Loader& loader);

}  // namespace dptrain::train
