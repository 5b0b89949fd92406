// dptrain predict's class probabilities beside another program's (PyTorch's), image by image:
// how two programs that load the same weights are held to each other on any CPU. Exact equality
// of their argmax is not asked where an image's two most likely classes lie within rounding of
// each other: each side's kernels round differently, and such a near tie may fall either way.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace dptrain::testing {

// `dptrain predict --json --top 10` of every image in an IDX file: ten probabilities an image,
// by label.
std::vector<std::vector<double>> predicted_probabilities(const std::filesystem::path& model,
                                                         const std::filesystem::path& config,
                                                         const std::filesystem::path& images);

struct PredictionAgreement {
  double largest_difference = 0;  // of one probability, over every image and class
  int64_t near_ties = 0;          // images whose two likeliest classes are within `tie` (theirs)
  int64_t disagreeing = 0;        // other images whose likeliest class differs
  int64_t classes_picked = 0;     // how many classes are some image's likeliest (ours)
};

PredictionAgreement agreement(const std::vector<std::vector<double>>& ours,
                              const std::vector<std::vector<double>>& theirs, double tie);

// The checks both round-trip tests make of `theirs` (PyTorch's probabilities): every probability
// within 1e-5 of ours, the same class wherever their two likeliest are 1e-4 apart, and fewer near
// ties than `most_near_ties`. The agreement, for the caller's own checks.
PredictionAgreement check_same_predictions(const std::vector<std::vector<double>>& ours,
                                           const std::vector<std::vector<double>>& theirs,
                                           int64_t most_near_ties);

}  // namespace dptrain::testing
