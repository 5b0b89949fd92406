#include "data/pil_convert.h"

namespace dptrain::data {

torch::Tensor pil_convert(const uint8_t* pixels, int64_t height, int64_t width, int in, int out) {
  torch::Tensor converted = torch::empty({height, width, out}, torch::kUInt8);
  uint8_t* to = converted.data_ptr<uint8_t>();
  const bool colour = in >= 3;
  for (int64_t i = 0; i < height * width; ++i) {
    const uint8_t* p = pixels + i * in;
    if (out == 1) {
      // L = (19595 R + 38470 G + 7471 B + 2^15) >> 16, PIL's rounding of 0.299/0.587/0.114.
      to[i] =
          colour
              ? static_cast<uint8_t>((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16)
              : p[0];
    } else {
      for (int c = 0; c < 3; ++c) to[i * 3 + c] = colour ? p[c] : p[0];
    }
  }
  return converted;
}

}  // namespace dptrain::data
