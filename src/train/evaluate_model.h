// `dptrain evaluate` and `dptrain predict` over library code: a model file's figures on the
// experiment's test or validation set, on the experiment's backend (ddp ranks each taking their
// shard as in training); and a model file's class probabilities for single images.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "launch/environment.h"
#include "parallel/backend.h"
#include "train/evaluate.h"

namespace dptrain::train {

enum class Split { kTest, kVal };

struct ModelEvaluation {
  EvalResult result;
  std::vector<std::string>
      classes;  // by label: the data's (the run's record, where given, checked)
};

// Every rank calls it; the result is the whole set's on every rank. `val` needs the experiment's
// data.val_split (a config error otherwise); it holds out the same samples as training did.
ModelEvaluation evaluate_model_file(const config::Config& config, const launch::RankInfo& rank,
                                    const std::filesystem::path& model_file, Split split);

// What a person reads: loss and accuracy, accuracy per class, the confusion matrix.
std::string format_evaluation(const EvalResult& r, const std::vector<std::string>& classes,
                              const std::string& split);
nlohmann::json evaluation_json(const EvalResult& r, const std::vector<std::string>& classes,
                               const std::string& split, const std::filesystem::path& model_file);

// The model file's weights in the experiment's model, on the first of parallel.devices (one
// process, whatever the backend).
class Classifier {
 public:
  Classifier(const config::Config& config, const std::filesystem::path& model_file);
  // Softmax probabilities [n, classes] for images [n, C, H, W] as the run's data had them (float,
  // on the host).
  torch::Tensor probabilities(const torch::Tensor& images);

 private:
  std::unique_ptr<parallel::Backend> backend_;
};

}  // namespace dptrain::train
