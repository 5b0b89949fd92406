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

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->factories["lenet"] = [](const config::ModelConfig& c) {
      return torch::nn::AnyModule(LeNet(c.init_std));
    };
    reg->factories["resnet18"] = [](const config::ModelConfig& c) {
      return torch::nn::AnyModule(ResNet18(c.init_std));
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
