// Reading back what a finished run wrote, to compare backends: model.pt's parameters and
// summary.json.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

namespace dptrain::testing {

// model.pt's tensors in the model's order.
std::vector<torch::Tensor> load_parameters(const std::filesystem::path& model_pt);
nlohmann::json summary_of(const std::filesystem::path& run_dir);
// metrics.jsonl's records, one per epoch.
std::vector<nlohmann::json> metrics_of(const std::filesystem::path& run_dir);

// The largest difference between matching tensors, relative to the largest magnitude in `b`'s
// tensor. Fails the test when the lists do not match in length or shapes.
double max_relative_difference(const std::vector<torch::Tensor>& a,
                               const std::vector<torch::Tensor>& b);

}  // namespace dptrain::testing
