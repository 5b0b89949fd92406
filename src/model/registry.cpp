#include "model/registry.h"

#include <map>
#include <mutex>

#include "core/error.h"
#include "model/lenet.h"
#include "model/resnet.h"

namespace dptrain::model {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, ModelFactory> factories;
};

// LeNet's first linear layer takes the 800 values a 28x28 input leaves.
void refuse_lenet_size(const std::vector<int64_t>& size) {
  if (size == std::vector<int64_t>{28, 28}) return;
  const std::string text =
      size.size() == 2 ? std::to_string(size[1]) + "x" + std::to_string(size[0]) : "another size";
  throw core::Error(core::ErrorCode::kConfig,
                    "model.name \"lenet\" takes 28x28 pictures, and the data's are " + text,
                    "resize them to 28x28 ({\"name\": \"resize\", \"size\": [28, 28]} in "
                    "data.train_transforms and data.eval_transforms), or use model.name "
                    "\"resnet18\", which takes any size");
}

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->factories["lenet"] = [](const config::ModelConfig& c) {
      refuse_lenet_size(c.input_size);
      return torch::nn::AnyModule(LeNet(c.init_std, c.in_channels, c.num_classes));
    };
    reg->factories["resnet18"] = [](const config::ModelConfig& c) {
      return torch::nn::AnyModule(ResNet18(c.init_std, c.num_classes, c.in_channels));
    };
    return reg;
  }();
  return *r;
}

}  // namespace

void register_model(const std::string& name, ModelFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> model_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.factories) names.push_back(entry.first);
  return names;
}

config::ModelConfig model_config_for(const config::Config& config) {
  config::ModelConfig model = config.model;
  const config::DataConfig& data = config.data;
  if (data.channels > 0) model.in_channels = data.channels;
  if (!data.classes.empty()) model.num_classes = static_cast<int64_t>(data.classes.size());
  if (!data.image_size.empty()) model.input_size = data.image_size;
  return model;
}

torch::nn::AnyModule make_model(const config::ModelConfig& config) {
  ModelFactory factory;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.factories.find(config.name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& name : model_names()) known += (known.empty() ? "" : ", ") + name;
    throw core::Error(core::ErrorCode::kConfig, "model.name: unknown model \"" + config.name + "\"",
                      "known models: " + known);
  }
  return factory(config);
}

}  // namespace dptrain::model
