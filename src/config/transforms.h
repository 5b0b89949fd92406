// data.train_transforms and data.eval_transforms: lists of torchvision transforms by name, each
// an object of torchvision's parameter names with torchvision's defaults, read and checked here
// (an unknown name or parameter, a value of the wrong type or range, is a config error naming
// data.train_transforms[i].param) and written back whole, every default filled in, so that a
// run's config.json says exactly what it did. What each does is data/transforms.h's.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "config/checker.h"

namespace dptrain::config {

enum class TransformName {
  kResize,
  kCenterCrop,
  kRandomCrop,
  kRandomResizedCrop,
  kRandomHorizontalFlip,
  kNormalize,
};

// The longest side a transform takes or makes, as the pictures dptrain decodes (data/picture.h).
inline constexpr int64_t kLargestSide = 16384;

struct TransformSpec {
  TransformName name = TransformName::kResize;
  // resize: [side] (the shorter edge, the aspect kept) or [height, width]; the crops: [h, w]
  // ([side] given is [side, side]).
  std::vector<int64_t> size;
  bool antialias = true;  // resize, random_resized_crop (torchvision v2's default)
  // random_crop: [left, top, right, bottom] (torchvision's int, [lr, tb] or four), each >= 0.
  std::array<int64_t, 4> padding = {0, 0, 0, 0};
  bool pad_if_needed = false;
  double fill = 0;                            // padding_mode "constant": the padded value
  std::string padding_mode = "constant";      // constant, edge, reflect, symmetric
  double p = 0.5;                             // random_horizontal_flip
  std::array<double, 2> scale = {0.08, 1.0};  // random_resized_crop
  std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0};  // random_resized_crop
  std::vector<double> mean;                              // normalize, one per channel
  std::vector<double> std;                               // normalize, each > 0
};

// The names a config file uses, in the order the docs list them; `name`'s.
std::vector<std::string> transform_names();
const char* transform_name(TransformName name);
// Whether it draws: random_crop, random_resized_crop, random_horizontal_flip.
bool is_random(TransformName name);

// `list` (a JSON array) read as transforms; `key` ("data.train_transforms") names it in the
// errors `check` raises.
std::vector<TransformSpec> parse_transforms(const nlohmann::json& list, const std::string& key,
                                            const Checker& check);

// The list as a config file writes it, with every parameter of each transform.
nlohmann::json transforms_json(const std::vector<TransformSpec>& transforms);

}  // namespace dptrain::config
