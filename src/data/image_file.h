// The images a person hands `dptrain predict`: IDX image files (every image, or one by index)
// and PNG, JPEG or PGM/PPM pictures of any size, grey or colour (data/picture.h). Each becomes
// what training fed the model: CxHxW floats v / 255 (d2l's 1x28x28 by default), converted and
// resized as torchvision does on a PIL image (Grayscale() or convert("RGB"), Resize((H, W)),
// ToTensor()).
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace dptrain::data {

struct InputImage {
  std::string name;     // the file, with "#i" for an IDX file's image i
  torch::Tensor image;  // float32 [C, H, W]
};

// What the model takes: 1 channel (grey) or 3 (RGB), of height x width.
struct InputShape {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  // The run's evaluation transforms, which then make each picture the model's input instead of
  // a resize to height x width.
  std::vector<config::TransformSpec> transforms;
};

// The input of the model a run's config was trained for: its data.channels, data.image_size and
// data.eval_transforms, else (no record of them) an IDX data set's 1x28x28 and a folder's 3
// channels.
InputShape input_shape_of(const config::DataConfig& data);

// A data error naming the file when it is unreadable, no image, or an empty IDX file; an index
// past the end is an error too.
std::vector<InputImage> read_input_images(const std::filesystem::path& path,
                                          std::optional<int64_t> index = std::nullopt,
                                          const InputShape& shape = {});

// 8-bit pixels [h, w, shape.channels] to the model's input: through shape.transforms, or each
// channel resized as PIL resizes its bands when the size is not the shape's.
// `name` (the file) names the picture in an error.
torch::Tensor to_model_input(const torch::Tensor& pixels, const InputShape& shape = {},
                             const std::string& name = "the picture");

}  // namespace dptrain::data
