#include "data/png_check.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>

namespace dptrain::data {
namespace {

uint32_t big_endian(const std::string& bytes, size_t at) {
  return uint32_t{static_cast<uint8_t>(bytes[at])} << 24 |
         uint32_t{static_cast<uint8_t>(bytes[at + 1])} << 16 |
         uint32_t{static_cast<uint8_t>(bytes[at + 2])} << 8 |
         uint32_t{static_cast<uint8_t>(bytes[at + 3])};
}

// The most bytes a PNG's filtered scanlines can take: rows of ceil(width * bits / 8) bytes, each
// after a filter byte, doubled to cover Adam7's seven passes and their extra filter bytes.
uint64_t scanline_bound(uint32_t width, uint32_t height, uint8_t bit_depth, uint8_t color_type) {
  const int channels = color_type == 2 ? 3 : color_type == 4 ? 2 : color_type == 6 ? 4 : 1;
  const uint64_t row = (uint64_t{width} * channels * bit_depth + 7) / 8 + 1;
  return 2 * row * height + 1024;
}

// Inflates `compressed` without keeping its output; false once more than `bound` bytes came out.
bool inflates_within(const std::string& compressed, uint64_t bound) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return true;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(std::min<size_t>(compressed.size(), UINT32_MAX));
  uint64_t produced = 0;
  unsigned char out[1 << 16];
  int status = Z_OK;
  while (status == Z_OK && produced <= bound) {
    z.next_out = out;
    z.avail_out = sizeof out;
    status = inflate(&z, Z_NO_FLUSH);
    produced += sizeof out - z.avail_out;
    if (status == Z_BUF_ERROR && z.avail_in == 0) break;  // the stream ends early: stb's to say
  }
  inflateEnd(&z);
  return produced <= bound;
}

}  // namespace

std::string png_inflation_problem(const std::string& png) {
  constexpr size_t kSignature = 8;
  if (png.size() < kSignature + 8 + 13 || png.compare(kSignature + 4, 4, "IHDR") != 0) return "";
  const uint32_t width = big_endian(png, kSignature + 8);
  const uint32_t height = big_endian(png, kSignature + 12);
  const auto bit_depth = static_cast<uint8_t>(png[kSignature + 16]);
  const auto color_type = static_cast<uint8_t>(png[kSignature + 17]);
  std::string idat;  // the image data's chunks, joined: no more than the file holds
  for (size_t at = kSignature; at + 12 <= png.size();) {
    const uint32_t length = big_endian(png, at);
    if (length > png.size() - at - 12) break;  // a chunk past the end: stb's to report
    if (png.compare(at + 4, 4, "IDAT") == 0) idat.append(png, at + 8, length);
    at += 12 + size_t{length};
  }
  const uint64_t bound = scanline_bound(width, height, bit_depth, color_type);
  if (inflates_within(idat, bound)) return "";
  return "image data inflate to more than the " + std::to_string(bound) + " bytes its size of " +
         std::to_string(width) + "x" + std::to_string(height) + " can hold";
}

}  // namespace dptrain::data
