#include "data/picture.h"

#include <stb_image.h>

#include "core/error.h"
#include "data/jpeg_decode.h"
#include "data/pil_convert.h"
#include "data/png_check.h"
#include "data/pnm_check.h"

namespace dptrain::data {
namespace {

[[noreturn]] void not_a_picture(const std::filesystem::path& name, const std::string& why) {
  throw core::Error(core::ErrorCode::kData, name.string() + ": " + why,
                    "give a PNG, JPEG or binary PGM/PPM picture");
}

bool starts_as_png(const std::string& bytes) {
  static const std::string kPng("\x89PNG\r\n\x1a\n", 8);
  return bytes.compare(0, kPng.size(), kPng) == 0;
}

bool starts_as_pnm(const std::string& bytes) {
  return bytes.size() >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6');
}

void check_size(const std::filesystem::path& name, int64_t width, int64_t height,
                const PictureLimits& limits) {
  // The sides first: a header's may be up to 2^32 - 1 each, whose product overflows.
  if (width > limits.max_side || height > limits.max_side || width * height > limits.max_pixels) {
    // data.max_image_pixels need not be whole megapixels (PIL's guard is 89,478,485 pixels).
    const std::string most = limits.max_pixels % (int64_t{1} << 20) == 0
                                 ? std::to_string(limits.max_pixels >> 20) + " megapixels"
                                 : std::to_string(limits.max_pixels) + " pixels";
    not_a_picture(name, "an image of " + std::to_string(width) + "x" + std::to_string(height) +
                            " pixels, more than the " + most + " or " +
                            std::to_string(limits.max_side) +
                            " pixels a side dptrain decodes; scale it down first");
  }
}

torch::Tensor decode_jpeg_picture(const std::filesystem::path& name, const std::string& bytes,
                                  int channels, const PictureLimits& limits) {
  JpegInfo info;
  if (const std::string problem = jpeg_problem(bytes, info); !problem.empty()) {
    not_a_picture(name, problem);
  }
  check_size(name, info.width, info.height, limits);
  // Decoded as grey or as RGB (data/jpeg_decode.h); libjpeg's own buffers are of the same order.
  const int64_t sample_bytes = int64_t{info.width} * info.height * (info.grey ? 1 : 3);
  if (sample_bytes > limits.max_sample_bytes) {
    not_a_picture(name, "an image of " + std::to_string(info.width) + "x" +
                            std::to_string(info.height) + " pixels whose samples take " +
                            std::to_string(sample_bytes) + " bytes, more than the " +
                            std::to_string(limits.max_sample_bytes >> 20) +
                            " MiB dptrain decodes; scale it down first");
  }
  torch::Tensor pixels;
  if (const std::string problem = decode_jpeg(bytes, info, channels, pixels); !problem.empty()) {
    not_a_picture(name, problem);
  }
  return pixels;
}

// PNG or PGM/PPM, through stb_image once its own check has passed.
torch::Tensor decode_stb_picture(const std::filesystem::path& name, const std::string& bytes,
                                 int channels, const PictureLimits& limits) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) not_a_picture(name, "a file over 2 GB");
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const int size = static_cast<int>(bytes.size());
  // A PGM/PPM's header is parsed here before stb's parser sees it (data/pnm_check.h says why).
  if (starts_as_pnm(bytes)) {
    if (const std::string problem = pnm_problem(bytes); !problem.empty()) {
      not_a_picture(name, "a PGM/PPM whose " + problem);
    }
  }
  int64_t declared_width = 0, declared_height = 0;
  if (starts_as_png(bytes) && png_declared_size(bytes, &declared_width, &declared_height)) {
    check_size(name, declared_width, declared_height, limits);
  }
  int width = 0, height = 0, stored = 0;
  if (stbi_info_from_memory(data, size, &width, &height, &stored) == 0) {
    not_a_picture(name,
                  std::string("not a readable PNG or PGM image (") + stbi_failure_reason() + ")");
  }
  check_size(name, width, height, limits);
  const int64_t sample_bytes =
      int64_t{width} * height * stored * (stbi_is_16_bit_from_memory(data, size) != 0 ? 2 : 1);
  if (sample_bytes > limits.max_sample_bytes) {
    not_a_picture(name, "an image of " + std::to_string(width) + "x" + std::to_string(height) +
                            " pixels whose samples take " + std::to_string(sample_bytes) +
                            " bytes, more than the " +
                            std::to_string(limits.max_sample_bytes >> 20) +
                            " MiB dptrain decodes; scale it down or save it as 8-bit grey first");
  }
  if (starts_as_png(bytes)) {
    // stb keeps a 16-bit grey sample's high byte; PIL opens such a file as mode I;16, whose
    // convert("L") is not that: refused rather than decoded unlike torchvision.
    if (stored == 1 && stbi_is_16_bit_from_memory(data, size) != 0) {
      not_a_picture(
          name,
          "a 16-bit grey PNG, which dptrain does not decode as PIL does (save it as 8-bit grey)");
    }
    if (const std::string problem = png_problem(bytes); !problem.empty()) {
      not_a_picture(name, "a PNG whose " + problem);
    }
  }
  unsigned char* pixels = stbi_load_from_memory(data, size, &width, &height, &stored, 0);
  if (pixels == nullptr) {
    not_a_picture(name,
                  std::string("not a readable PNG or PGM image (") + stbi_failure_reason() + ")");
  }
  torch::Tensor converted = pil_convert(pixels, height, width, stored, channels);
  stbi_image_free(pixels);
  return converted;
}

}  // namespace

torch::Tensor decode_picture(const std::filesystem::path& name, const std::string& bytes,
                             int channels, const PictureLimits& limits) {
  TORCH_CHECK(channels == 1 || channels == 3, "decode_picture: channels must be 1 or 3");
  if (is_jpeg(bytes)) return decode_jpeg_picture(name, bytes, channels, limits);
  if (starts_as_png(bytes) || starts_as_pnm(bytes))
    return decode_stb_picture(name, bytes, channels, limits);
  not_a_picture(name, "neither a PNG, a JPEG nor a PGM/PPM image");
}

}  // namespace dptrain::data
