#include "data/png_check.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>

namespace dptrain::data {
namespace {

constexpr size_t kSignature = 8;
constexpr size_t kChunkOverhead = 12;  // length, type, CRC
constexpr uint32_t kHeaderLength = 13;

uint32_t big_endian(const std::string& bytes, size_t at) {
  return uint32_t{static_cast<uint8_t>(bytes[at])} << 24 |
         uint32_t{static_cast<uint8_t>(bytes[at + 1])} << 16 |
         uint32_t{static_cast<uint8_t>(bytes[at + 2])} << 8 |
         uint32_t{static_cast<uint8_t>(bytes[at + 3])};
}

int channels_of(uint8_t color_type) {
  return color_type == 2 ? 3 : color_type == 4 ? 2 : color_type == 6 ? 4 : 1;
}

// The bytes a PNG's filtered scanlines take exactly: a filter byte and ceil(width * bits / 8)
// bytes a row, over each of Adam7's seven passes (an empty pass takes none) when interlaced.
uint64_t scanline_bytes(uint32_t width, uint32_t height, uint8_t bit_depth, uint8_t color_type,
                        bool interlaced) {
  const uint64_t bits = static_cast<uint64_t>(channels_of(color_type)) * bit_depth;
  const auto rows = [&](uint64_t w, uint64_t h) {
    return w == 0 || h == 0 ? 0 : ((w * bits + 7) / 8 + 1) * h;
  };
  if (!interlaced) return rows(width, height);
  static constexpr uint32_t kX[7] = {0, 4, 0, 2, 0, 1, 0}, kY[7] = {0, 0, 4, 0, 2, 0, 1};
  static constexpr uint32_t kDx[7] = {8, 8, 4, 4, 2, 2, 1}, kDy[7] = {8, 8, 8, 4, 4, 2, 2};
  uint64_t total = 0;
  for (int pass = 0; pass < 7; ++pass) {
    const uint64_t w = width > kX[pass] ? (width - kX[pass] + kDx[pass] - 1) / kDx[pass] : 0;
    const uint64_t h = height > kY[pass] ? (height - kY[pass] + kDy[pass] - 1) / kDy[pass] : 0;
    total += rows(w, h);
  }
  return total;
}

// The most bytes a PNG's filtered scanlines can take: rows of ceil(width * bits / 8) bytes, each
// after a filter byte, doubled to cover Adam7's seven passes and their extra filter bytes.
uint64_t scanline_bound(uint32_t width, uint32_t height, uint8_t bit_depth, uint8_t color_type) {
  const uint64_t row = (uint64_t{width} * channels_of(color_type) * bit_depth + 7) / 8 + 1;
  return 2 * row * height + 1024;
}

// Why `compressed` is no zlib stream that inflates, whole, to at least `minimum` and at most
// `bound` bytes (what `holder` needs and can hold); nothing when it is. Its output is counted,
// never kept.
std::string inflation_problem(const std::string& compressed, uint64_t minimum, uint64_t bound,
                              const std::string& holder) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return "image data zlib could not begin to inflate";
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
  }
  const std::string message = z.msg != nullptr ? z.msg : "";
  inflateEnd(&z);
  if (produced > bound) {
    return "image data inflate to more than the " + std::to_string(bound) + " bytes " + holder +
           " can hold";
  }
  if (status == Z_STREAM_END && produced < minimum) {
    return "image data inflate to " + std::to_string(produced) + " bytes, fewer than the " +
           std::to_string(minimum) + " " + holder + " needs (a truncated image)";
  }
  if (status == Z_STREAM_END) return "";
  if (status == Z_BUF_ERROR) return "image data end before their zlib stream does";
  return "image data zlib cannot inflate (" + (message.empty() ? "an error" : message) + ")";
}

}  // namespace

bool png_declared_size(const std::string& png, int64_t* width, int64_t* height) {
  if (png.size() < kSignature + kChunkOverhead + kHeaderLength ||
      big_endian(png, kSignature) != kHeaderLength || png.compare(kSignature + 4, 4, "IHDR") != 0) {
    return false;
  }
  *width = big_endian(png, kSignature + 8);
  *height = big_endian(png, kSignature + 12);
  return true;
}

std::string png_problem(const std::string& png) {
  int64_t declared_width = 0, declared_height = 0;
  if (!png_declared_size(png, &declared_width, &declared_height)) {
    return "first chunk is not its 13-byte IHDR header";
  }
  const auto width = static_cast<uint32_t>(declared_width);
  const auto height = static_cast<uint32_t>(declared_height);
  const auto bit_depth = static_cast<uint8_t>(png[kSignature + 16]);
  const auto color_type = static_cast<uint8_t>(png[kSignature + 17]);
  const bool interlaced = png[kSignature + 20] != 0;
  std::string idat;  // the image data's chunks, joined: no more than the file holds
  for (size_t at = kSignature; at + kChunkOverhead <= png.size();) {
    const uint32_t length = big_endian(png, at);
    if (length > png.size() - at - kChunkOverhead) return "chunks run past the end of the file";
    const std::string type = png.substr(at + 4, 4);
    // Apple's CgBI files hold raw deflate without zlib's header, which stb alone would take.
    if (type == "CgBI") return "chunks include CgBI (Apple's variant, which zlib cannot read)";
    if (type == "IDAT") idat.append(png, at + 8, length);
    at += kChunkOverhead + size_t{length};
    if (type == "IEND") break;
  }
  return inflation_problem(idat, scanline_bytes(width, height, bit_depth, color_type, interlaced),
                           scanline_bound(width, height, bit_depth, color_type),
                           "its size of " + std::to_string(width) + "x" + std::to_string(height));
}

}  // namespace dptrain::data
