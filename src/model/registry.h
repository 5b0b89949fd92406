// Models by name: the config's `model.name` picks a factory here. A model is returned as an
// AnyModule, so the trainer and the backends need not know its type (and dp can clone it).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace dptrain::model {

using ModelFactory = std::function<torch::nn::AnyModule(const config::ModelConfig&)>;

// Adds (or replaces) a model; the built-in ones are registered on first use.
void register_model(const std::string& name, ModelFactory factory);
std::vector<std::string> model_names();

// config.model with what the model takes and gives from config.data (a run's resolved config
// holds the data's channels, classes and size); the defaults, Fashion-MNIST's, where it is empty.
config::ModelConfig model_config_for(const config::Config& config);

// Throws a config error naming `model.name` and the known names for an unknown model (and one
// for an input the model cannot take).
torch::nn::AnyModule make_model(const config::ModelConfig& config);

}  // namespace dptrain::model
