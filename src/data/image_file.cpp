#include "data/image_file.h"

#include <stb_image.h>

#include <cstdint>

#include "core/error.h"
#include "core/fs.h"
#include "data/idx.h"
#include "data/pil_resize.h"
#include "data/png_check.h"

namespace dptrain::data {
namespace {

constexpr int64_t kSide = 28;
// The largest picture decoded: 16 megapixels, 80 MB with stb_image's RGBA and our grey copy.
constexpr int64_t kMaxPixels = int64_t{1} << 24;

[[noreturn]] void not_an_image(const std::filesystem::path& path, const std::string& why) {
  throw core::Error(core::ErrorCode::kData, path.string() + ": " + why,
                    "give IDX image files (such as t10k-images-idx3-ubyte.gz) or PNG/PGM images");
}

bool is_idx(const std::string& bytes) {
  // A raw IDX file of unsigned bytes starts 00 00 08 nn; a gzip file starts 1f 8b.
  return bytes.size() >= 4 &&
         ((bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 8) ||
          (static_cast<uint8_t>(bytes[0]) == 0x1f && static_cast<uint8_t>(bytes[1]) == 0x8b));
}

std::vector<InputImage> read_idx_images(const std::filesystem::path& path,
                                        std::optional<int64_t> index) {
  IdxArray idx = read_idx(path);
  if (idx.dims.size() != 3 || idx.dims[1] != kSide || idx.dims[2] != kSide) {
    not_an_image(path, "an IDX file that holds no 28x28 images");
  }
  const int64_t count = idx.dims[0];
  if (count == 0) not_an_image(path, "an IDX file with no images");
  if (index && (*index < 0 || *index >= count)) {
    not_an_image(path, "--index " + std::to_string(*index) + " is past its " +
                           std::to_string(count) + " images (0 to " + std::to_string(count - 1) +
                           ")");
  }
  const torch::Tensor all =
      torch::from_blob(idx.values.data(), {count, kSide, kSide}, torch::kUInt8);
  std::vector<InputImage> images;
  for (int64_t i = index.value_or(0); i < (index ? *index + 1 : count); ++i) {
    images.push_back({path.string() + "#" + std::to_string(i), to_model_input(all[i])});
  }
  return images;
}

// PIL's convert("L"): L = (19595 R + 38470 G + 7471 B + 2^15) >> 16; alpha is dropped.
torch::Tensor grey_of(const unsigned char* pixels, int width, int height, int channels) {
  torch::Tensor grey = torch::empty({height, width}, torch::kUInt8);
  uint8_t* out = grey.data_ptr<uint8_t>();
  for (int64_t i = 0; i < int64_t{width} * height; ++i) {
    const unsigned char* p = pixels + i * channels;
    out[i] =
        channels < 3
            ? p[0]
            : static_cast<uint8_t>((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16);
  }
  return grey;
}

// PNG's signature, or a binary PGM/PPM's "P5"/"P6": stb_image decodes a dozen more formats, with
// public CVEs among them, and only these two may reach it.
bool is_png_or_pnm(const std::string& bytes) {
  static const std::string kPng("\x89PNG\r\n\x1a\n", 8);
  return bytes.compare(0, kPng.size(), kPng) == 0 ||
         (bytes.size() >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6'));
}

InputImage read_picture(const std::filesystem::path& path, const std::string& bytes) {
  if (!is_png_or_pnm(bytes)) not_an_image(path, "neither a PNG nor a PGM/PPM image");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) not_an_image(path, "a file over 2 GB");
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const int size = static_cast<int>(bytes.size());
  int width = 0, height = 0, channels = 0;
  // The header's size, read before anything is decoded.
  if (stbi_info_from_memory(data, size, &width, &height, &channels) == 0) {
    not_an_image(path,
                 std::string("not a readable PNG or PGM image (") + stbi_failure_reason() + ")");
  }
  if (int64_t{width} * height > kMaxPixels) {
    not_an_image(path, "an image of " + std::to_string(width) + "x" + std::to_string(height) +
                           " pixels, more than the " + std::to_string(kMaxPixels >> 20) +
                           " megapixels dptrain decodes; scale it down first");
  }
  if (bytes[0] != 'P') {
    if (const std::string problem = png_inflation_problem(bytes); !problem.empty()) {
      not_an_image(path, "a PNG whose " + problem);
    }
  }
  unsigned char* pixels = stbi_load_from_memory(data, size, &width, &height, &channels, 0);
  if (pixels == nullptr) {
    not_an_image(path,
                 std::string("not a readable PNG or PGM image (") + stbi_failure_reason() + ")");
  }
  torch::Tensor grey = grey_of(pixels, width, height, channels);
  stbi_image_free(pixels);
  return {path.string(), to_model_input(grey)};
}

}  // namespace

torch::Tensor to_model_input(const torch::Tensor& grey) {
  const torch::Tensor pixels = pil_bilinear_resize(grey, kSide, kSide);
  return (pixels.to(torch::kFloat32) / 255.0f).unsqueeze(0);  // ToTensor
}

std::vector<InputImage> read_input_images(const std::filesystem::path& path,
                                          std::optional<int64_t> index) {
  const std::string bytes = core::read_regular_file(path);  // names a missing file or a folder
  if (bytes.empty()) not_an_image(path, "an empty file");
  if (is_idx(bytes)) return read_idx_images(path, index);
  if (index) not_an_image(path, "--index applies to IDX files, and this is none");
  return {read_picture(path, bytes)};
}

}  // namespace dptrain::data
