// Loss, accuracy and the confusion matrix for the backend's current parameters, summed over
// every batch (and, for multi-process backends, over every rank's shard) before dividing.
#pragma once

#include <functional>
#include <vector>

#include "data/loader.h"
#include "parallel/backend.h"

namespace dptrain::train {

struct EvalResult {
  double loss = 0;      // mean cross-entropy per sample
  double accuracy = 0;  // fraction classified correctly
  int64_t samples = 0;
  int64_t correct = 0;
  // confusion[truth * classes + predicted]: how many samples of class `truth` got `predicted`;
  // empty above kConfusionClasses classes.
  std::vector<int64_t> confusion;
};

// The most classes whose confusion matrix evaluation keeps (1,000: 8 MB summed over the ranks).
constexpr int64_t kConfusionClasses = 1000;

// Over a loader of `classes` classes. `after_batch(done, batches)`, when given, after each batch
// (for a live line).
EvalResult evaluate(parallel::Backend& backend, data::Loader& loader, int64_t classes,
                    const std::function<void(int64_t, int64_t)>& after_batch = {});

}  // namespace dptrain::train
