// One picture file's bytes decoded to 8-bit pixels as PIL opens and converts them (the loader of
// torchvision's ImageFolder), for predict and for training on folders of pictures: PNG and binary
// PGM/PPM through Debian's stb_image, JPEG through libjpeg-turbo, each only after a header check
// of its own (data/png_check.h, pnm_check.h, jpeg_decode.h say why) and within limits checked
// before anything is decoded. stb_image decodes a dozen more formats, with public CVEs among
// them, and only these reach it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace dptrain::data {

struct PictureLimits {
  int64_t max_pixels = int64_t{1} << 24;
  int64_t max_side = 16384;
  // The samples as the file stores them (a 16-bit PNG's are 2 bytes): stb_image holds the
  // inflated scanlines, those samples and the 8-bit ones at once.
  int64_t max_sample_bytes = int64_t{16} << 20;
};

// uint8 [H, W, channels]: 1 as PIL's convert("L"), 3 as convert("RGB") (alpha dropped). A data
// error naming `name` when the bytes are no such picture, fail their check, exceed `limits` or do
// not decode whole.
torch::Tensor decode_picture(const std::filesystem::path& name, const std::string& bytes,
                             int channels, const PictureLimits& limits = {});

}  // namespace dptrain::data
