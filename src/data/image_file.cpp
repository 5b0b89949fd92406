#include "data/image_file.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "core/fs.h"
#include "data/idx.h"
#include "data/picture.h"
#include "data/pil_resize.h"
#include "data/transforms.h"

namespace dptrain::data {
namespace {

constexpr int64_t kSide = 28;
// A picture's file holds no more than its samples and a little (stored deflate blocks add 5 bytes
// in 64 KB); an IDX file of 10,000 images (the test set's 7.8 MB) is the most predict takes at
// once, 31 MB of model input.
constexpr size_t kMaxPictureFileBytes = size_t{20} << 20;
constexpr int64_t kMaxImagesAtOnce = 10000;
// Nor does it read past more than this many (Fashion-MNIST has 70,000): a gzip file of 2 MB can
// hold 2 GB of images, and reading past them costs seconds of inflating.
constexpr int64_t kMaxImagesInFile = 100000;

[[noreturn]] void not_an_image(const std::filesystem::path& path, const std::string& why) {
  throw core::Error(core::ErrorCode::kData, path.string() + ": " + why,
                    "give IDX image files (such as t10k-images-idx3-ubyte.gz) or PNG, JPEG or PGM "
                    "pictures");
}

bool is_idx(const std::string& bytes) {
  // A raw IDX file of unsigned bytes starts 00 00 08 nn; a gzip file starts 1f 8b.
  return bytes.size() >= 4 &&
         ((bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 8) ||
          (static_cast<uint8_t>(bytes[0]) == 0x1f && static_cast<uint8_t>(bytes[1]) == 0x8b));
}

// Every image of the file, or image `index` alone (the others read past, not kept).
std::vector<InputImage> read_idx_images(const std::filesystem::path& path,
                                        std::optional<int64_t> index, const InputShape& shape) {
  // The header first: a file of more images than predict takes is refused before its values.
  const IdxArray header = read_idx_items(path, 0, 0);
  if (header.dims.size() != 3 || header.dims[1] != kSide || header.dims[2] != kSide) {
    not_an_image(path, "an IDX file that holds no 28x28 images");
  }
  const int64_t count = header.dims[0];
  if (index && (*index < 0 || *index >= count)) {
    not_an_image(path, "--index " + std::to_string(*index) + " is past its " +
                           std::to_string(count) + " images (0 to " + std::to_string(count - 1) +
                           ")");
  }
  if (count > kMaxImagesInFile) {
    throw core::Error(core::ErrorCode::kData,
                      path.string() + ": an IDX file of " + std::to_string(count) +
                          " images, more than the " + std::to_string(kMaxImagesInFile) +
                          " of any data set predict reads images from",
                      "split the file, or write the images to predict as PNG or PGM files");
  }
  if (!index && count > kMaxImagesAtOnce) {
    throw core::Error(core::ErrorCode::kData,
                      path.string() + ": an IDX file of " + std::to_string(count) +
                          " images, more than the " + std::to_string(kMaxImagesAtOnce) +
                          " predict takes at once",
                      "give --index I for one image, or evaluate the model on a test set "
                      "(dptrain evaluate)");
  }
  const int64_t first = index.value_or(0);
  IdxArray idx = index ? read_idx_items(path, first, 1) : read_idx(path);
  const int64_t taken = index ? 1 : count;
  // Opened again: a file replaced meanwhile must still be what its header said.
  if (idx.dims != header.dims || idx.values.size() != static_cast<size_t>(taken * kSide * kSide)) {
    not_an_image(path, "an IDX file that changed while it was read");
  }
  const torch::Tensor all =
      torch::from_blob(idx.values.data(), {taken, kSide, kSide}, torch::kUInt8);
  std::vector<InputImage> images;
  for (int64_t i = 0; i < taken; ++i) {
    // Grey as PIL's convert("RGB") makes it three channels: the value repeated.
    const torch::Tensor pixels = all[i].unsqueeze(2).expand({kSide, kSide, shape.channels});
    images.push_back(
        {path.string() + "#" + std::to_string(first + i), to_model_input(pixels, shape)});
  }
  return images;
}

}  // namespace

torch::Tensor to_model_input(const torch::Tensor& pixels, const InputShape& shape,
                             const std::string& name) {
  TORCH_CHECK(pixels.dim() == 3 && pixels.size(2) == shape.channels,
              "to_model_input: pixels must be [h, w, ", shape.channels, "]");
  if (!shape.transforms.empty()) {
    // The size first, from the shapes alone: a record's transforms must not allocate what the
    // model cannot take.
    const std::vector<int64_t> made =
        shape_after(shape.transforms, {shape.channels, pixels.size(0), pixels.size(1)},
                    name + ": the run's data.eval_transforms");
    if (made[1] != shape.height || made[2] != shape.width) {
      throw core::Error(core::ErrorCode::kData,
                        name + ": the run's data.eval_transforms make it " +
                            std::to_string(made[2]) + "x" + std::to_string(made[1]) +
                            ", and the model takes " + std::to_string(shape.width) + "x" +
                            std::to_string(shape.height),
                        "give a picture of the size the run's pictures had");
    }
    at::Generator generator = sample_generator(/*seed=*/0, /*epoch=*/0, /*index=*/0);
    return apply_transforms(shape.transforms, pixels.permute({2, 0, 1}), generator);
  }
  std::vector<torch::Tensor> planes;
  for (int64_t c = 0; c < shape.channels; ++c) {
    planes.push_back(
        pil_bilinear_resize(pixels.select(2, c).contiguous(), shape.height, shape.width));
  }
  return torch::stack(planes).to(torch::kFloat32) / 255.0f;  // ToTensor
}

InputShape input_shape_of(const config::DataConfig& data) {
  InputShape shape;
  shape.channels = data.channels > 0                          ? data.channels
                   : data.dataset == config::Dataset::kFolder ? 3
                                                              : 1;
  if (!data.image_size.empty()) {
    shape.height = data.image_size[0];
    shape.width = data.image_size[1];
  }
  shape.transforms = data.eval_transforms;
  return shape;
}

std::vector<InputImage> read_input_images(const std::filesystem::path& path,
                                          std::optional<int64_t> index, const InputShape& shape) {
  const core::ReadOnlyFile file(path);  // names a missing file, a folder or a device
  std::string head(std::min<uint64_t>(file.size(), 4), '\0');
  file.read(0, head.size(), head.data());
  if (head.empty()) not_an_image(path, "an empty file");
  // An IDX file is read as a stream, of any size, keeping only what is asked for.
  if (is_idx(head)) return read_idx_images(path, index, shape);
  if (index) not_an_image(path, "--index applies to IDX files, and this is none");
  if (file.size() > kMaxPictureFileBytes) {
    not_an_image(path, "a file of " + std::to_string(file.size()) + " bytes, more than the " +
                           std::to_string(kMaxPictureFileBytes >> 20) +
                           " MiB any picture dptrain decodes can need");
  }
  std::string bytes(file.size(), '\0');
  file.read(0, bytes.size(), bytes.data());
  // PIL's convert("L") (as torchvision's Grayscale() makes it) or convert("RGB").
  const int channels = static_cast<int>(shape.channels);
  return {
      {path.string(), to_model_input(decode_picture(path, bytes, channels), shape, path.string())}};
}

}  // namespace dptrain::data
