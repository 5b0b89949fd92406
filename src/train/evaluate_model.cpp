#include "train/evaluate_model.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/terminal.h"
#include "core/torch_compat.h"
#include "model/registry.h"
#include "parallel/backend.h"
#include "train/model_file.h"
#include "train/parameters.h"
#include "train/precision.h"
#include "train/session.h"

namespace dptrain::train {

ModelEvaluation evaluate_model_file(const config::Config& config, const launch::RankInfo& rank,
                                    const std::filesystem::path& model_file, Split split) {
  if (split == Split::kVal && config.data.val_split <= 0) {
    throw core::Error(core::ErrorCode::kConfig,
                      "--split val: the experiment holds out no validation set "
                      "(data.val_split is 0)",
                      "give the experiment the model was trained with (its run folder's "
                      "config.json), or --set data.val_split=...");
  }
  Session s = build_session(config, rank, SessionUse::kEvaluate);
  copy_into_model(*s.backend, read_model_file(model_file, s.state_specs));
  const AutocastScope autocast(s.backend->devices(), s.autocast);  // as training evaluated
  return {evaluate(*s.backend, split == Split::kVal ? *s.val_loader : *s.test_loader, s.classes()),
          s.config.data.classes};
}

std::string format_evaluation(const EvalResult& r, const std::vector<std::string>& classes,
                              const std::string& split) {
  std::string out = fmt::format("{} set: {} samples, loss {:.4f}, accuracy {:.4f} ({} correct)\n",
                                split, r.samples, r.loss, r.accuracy, r.correct);
  const int64_t n = static_cast<int64_t>(classes.size());
  if (r.confusion.empty()) {
    return out + fmt::format(
                     "(per-class figures and the confusion matrix: for up to {} classes, "
                     "and this data has {})\n",
                     kConfusionClasses, n);
  }
  out += fmt::format("\n{:>3}  {:<12} {:>8} {:>8}\n", "", "class", "samples", "accuracy");
  for (int64_t c = 0; c < n; ++c) {
    int64_t total = 0;
    for (int64_t p = 0; p < n; ++p) total += r.confusion[c * n + p];
    const double acc = total > 0 ? static_cast<double>(r.confusion[c * n + c]) / total : 0.0;
    // A class named by a folder may hold any character: escaped before it reaches a terminal.
    out +=
        fmt::format("{:>3}  {:<12} {:>8} {:>8.4f}\n", c, core::printable(classes[c]), total, acc);
  }
  out += "\nconfusion matrix (rows: true class, columns: predicted class)\n    ";
  for (int64_t p = 0; p < n; ++p) out += fmt::format(" {:>5}", p);
  out += "\n";
  for (int64_t c = 0; c < n; ++c) {
    out += fmt::format("{:>3} ", c);
    for (int64_t p = 0; p < n; ++p) out += fmt::format(" {:>5}", r.confusion[c * n + p]);
    out += "\n";
  }
  return out;
}

nlohmann::json evaluation_json(const EvalResult& r, const std::vector<std::string>& classes,
                               const std::string& split, const std::filesystem::path& model_file) {
  int64_t n = static_cast<int64_t>(classes.size());
  nlohmann::json per_class = nlohmann::json::array();
  nlohmann::json confusion = nlohmann::json::array();
  if (r.confusion.empty()) n = 0;  // more classes than the matrix is kept for
  for (int64_t c = 0; c < n; ++c) {
    std::vector<int64_t> row(r.confusion.begin() + c * n, r.confusion.begin() + (c + 1) * n);
    int64_t total = 0;
    for (int64_t v : row) total += v;
    per_class.push_back({{"label", c},
                         {"class", classes[c]},
                         {"samples", total},
                         {"correct", row[c]},
                         {"accuracy", total > 0 ? static_cast<double>(row[c]) / total : 0.0}});
    confusion.push_back(row);
  }
  return {{"model", model_file.string()}, {"split", split},         {"samples", r.samples},
          {"correct", r.correct},         {"loss", r.loss},         {"accuracy", r.accuracy},
          {"classes", classes},           {"per_class", per_class}, {"confusion", confusion}};
}

Classifier::Classifier(const config::Config& config, const std::filesystem::path& model_file) {
  config::ParallelConfig single = config.parallel;
  single.backend = config::Backend::kSingle;
  single.devices.resize(1);
  torch::nn::AnyModule model = model::make_model(model::model_config_for(config));
  const std::vector<model::StateSpec> specs = model::state_specs(*model.ptr());
  backend_ = parallel::make_backend(single, std::move(model), launch::RankInfo{});
  copy_into_model(*backend_, read_model_file(model_file, specs));
  backend_->set_training(false);
}

torch::Tensor Classifier::probabilities(const torch::Tensor& images) {
  core::compat::InferenceGuard no_autograd;
  const torch::Tensor logits = backend_->forward(images.to(backend_->input_device()));
  return torch::softmax(logits.to(torch::kFloat64), /*dim=*/1).cpu();
}

}  // namespace dptrain::train
