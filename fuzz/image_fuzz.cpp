// The picture reader of `dptrain predict` (PNG, PGM/PPM, behind their header checks) on arbitrary
// bytes. AddressSanitizer cannot see a decoder that reads pixels from memory the file never
// filled, so two checks of its own: a PGM/PPM that decodes held at least the bytes its header
// declares (with the shortest header, "P5 1 1 255\n"), and the same file decodes to the same image.
#include <stb_image.h>

#include "core/error.h"
#include "data/image_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = dptrain::fuzz::input_file(data, size);
  std::vector<dptrain::data::InputImage> once, again;
  try {
    once = dptrain::data::read_input_images(path);
    again = dptrain::data::read_input_images(path);
  } catch (const dptrain::core::Error&) {
    return 0;
  }
  if (once.size() != again.size()) __builtin_trap();
  for (size_t i = 0; i < once.size(); ++i) {
    if (!torch::equal(once[i].image, again[i].image)) __builtin_trap();
  }
  if (size >= 2 && data[0] == 'P' && (data[1] == '5' || data[1] == '6')) {
    int width = 0, height = 0, channels = 0;
    const int known =
        stbi_info_from_memory(data, static_cast<int>(size), &width, &height, &channels);
    constexpr size_t kShortestHeader = 11;
    if (known == 0 || size < kShortestHeader + size_t(width) * size_t(height) * size_t(channels)) {
      __builtin_trap();
    }
  }
  return 0;
}
