// `dptrain info --model NAME`: what a registered network is made of (model/summary.h).
#include <algorithm>
#include <iostream>

#include "app/commands.h"
#include "model/registry.h"
#include "model/summary.h"

namespace dptrain::app {

int print_model_summary(const std::string& name) {
  const std::vector<std::string> names = model::model_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    usage_error("info --model: no model \"" + name + "\"", "known models: " + known);
  }
  config::ModelConfig config;
  config.name = name;
  torch::nn::AnyModule model = model::make_model(config);
  // Fashion-MNIST's images: one channel of 28x28.
  const model::ModelSummary summary = model::summarize(model, {1, 28, 28});
  std::cout << model::format_summary(name, summary);
  return 0;
}

}  // namespace dptrain::app
