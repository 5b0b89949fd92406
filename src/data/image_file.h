// The images a person hands `dptrain predict`: IDX image files (every image, or one by index)
// and PNG, JPEG or PGM/PPM pictures of any size, grey or colour (data/picture.h). Each becomes
// what training feeds the model: 1x28x28 floats v / 255, converted and resized as torchvision
// does on a PIL image (Grayscale(), Resize((28, 28)), ToTensor()).
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dptrain::data {

struct InputImage {
  std::string name;     // the file, with "#i" for an IDX file's image i
  torch::Tensor image;  // float32 [1, 28, 28]
};

// A data error naming the file when it is unreadable, no image, or an empty IDX file; an index
// past the end is an error too.
std::vector<InputImage> read_input_images(const std::filesystem::path& path,
                                          std::optional<int64_t> index = std::nullopt);

// Grey 8-bit pixels [h, w] to the model's input, resized to 28x28 when they are not.
torch::Tensor to_model_input(const torch::Tensor& grey);

}  // namespace dptrain::data
