#include "data/classes.h"

#include "core/error.h"

namespace dptrain::data {

const std::vector<std::string>& class_names(const std::string& dataset) {
  static const std::vector<std::string> kFashion = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  static const std::vector<std::string> kDigits = {"0", "1", "2", "3", "4",
                                                   "5", "6", "7", "8", "9"};
  if (dataset == "fashion-mnist") return kFashion;
  if (dataset == "mnist") return kDigits;
  throw core::Error(core::ErrorCode::kConfig,
                    "data.dataset: no class names for \"" + dataset + "\"",
                    "use fashion-mnist or mnist");
}

std::vector<std::string> class_names_of(const config::DataConfig& data) {
  if (!data.classes.empty()) return data.classes;
  if (data.dataset == config::Dataset::kFolder) {
    throw core::Error(core::ErrorCode::kConfig,
                      "data.classes: the experiment reads a folder and names no classes",
                      "give the model's own run (its model.pt holds them, or config.json beside "
                      "it), not the experiment file it was trained from");
  }
  return class_names(config::name_of(data.dataset));
}

}  // namespace dptrain::data
