// The JPEG check and decoder that folders of pictures and predict reach (data/jpeg_decode.h,
// behind decode_picture's limits) on arbitrary bytes after a JPEG's first three. AddressSanitizer
// sees what libjpeg-turbo writes past a buffer, not a picture of another size than its header's,
// so three checks of its own, for grey and RGB alike: what decodes has the size its header
// declares, within the limits given, and the same bytes decode to the same pixels again.
#include "core/error.h"
#include "data/jpeg_decode.h"
#include "data/picture.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dptrain::data::JpegInfo;
  // Every input is a JPEG to the format check, so that the fuzzer spends its time past it.
  std::string bytes = "\xFF\xD8\xFF";
  bytes.append(reinterpret_cast<const char*>(data), size);
  dptrain::data::PictureLimits limits;  // small, so that one input costs milliseconds
  limits.max_pixels = int64_t{1} << 20;
  limits.max_side = 4096;
  limits.max_sample_bytes = int64_t{4} << 20;
  for (const int channels : {1, 3}) {
    torch::Tensor pixels;
    try {
      pixels = dptrain::data::decode_picture("fuzz.jpg", bytes, channels, limits);
    } catch (const dptrain::core::Error&) {
      continue;
    }
    JpegInfo info;
    if (!dptrain::data::jpeg_problem(bytes, info).empty()) __builtin_trap();
    if (pixels.dim() != 3 || pixels.size(0) != info.height || pixels.size(1) != info.width ||
        pixels.size(2) != channels) {
      __builtin_trap();
    }
    if (int64_t{info.width} * info.height > limits.max_pixels || info.width > limits.max_side ||
        info.height > limits.max_side) {
      __builtin_trap();
    }
    if (!torch::equal(pixels, dptrain::data::decode_picture("fuzz.jpg", bytes, channels, limits))) {
      __builtin_trap();
    }
  }
  return 0;
}
