// The captions are drawn with stb_easy_font (Debian's libstb-dev, as the decoders are): a font
// built into the header as line segments, so there is no font file to find, trust or ship; the
// PNG is stb_image_write's.
#include "data/preview_sheet.h"

#include <stb_image_write.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

// stb_easy_font is a header of static functions; those it does not call here are unused.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_easy_font.h>
#pragma GCC diagnostic pop

namespace dptrain::data {
namespace {

constexpr int64_t kGap = 2;         // pixels between tiles and around the sheet
constexpr int64_t kMinTile = 64;    // a tile's shorter side at least, after scaling
constexpr int64_t kLineUnits = 12;  // stb_easy_font's line height, in its units
constexpr uint8_t kBackground = 32;

struct Layout {
  int64_t n, channels, height, width;  // the batch
  int64_t zoom, text_scale, columns, rows, tile_w, tile_h, caption_h;
  int64_t sheet_w() const { return kGap + columns * (tile_w + kGap); }
  int64_t sheet_h() const { return kGap + rows * (tile_h + caption_h + kGap); }
};

Layout layout_of(int64_t n, int64_t channels, int64_t height, int64_t width) {
  Layout l{n, channels, height, width, 1, 1, 1, 1, 0, 0, 0};
  const int64_t side = std::max<int64_t>(1, std::min(l.height, l.width));
  l.zoom = std::max<int64_t>(1, (kMinTile + side - 1) / side);
  l.tile_w = l.width * l.zoom;
  l.tile_h = l.height * l.zoom;
  l.text_scale = l.tile_w >= 160 ? 2 : 1;
  l.caption_h = kLineUnits * l.text_scale;
  l.columns = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(double(l.n)))));
  l.columns = std::min<int64_t>(l.columns, 16);
  l.rows = (l.n + l.columns - 1) / l.columns;
  return l;
}

// The caption as the font can show it, cut (with "..") to `width` pixels.
std::string fitted_caption(const std::string& caption, int64_t width, int64_t scale) {
  std::string text;
  for (const unsigned char c : caption) text += (c >= 32 && c < 127) ? static_cast<char>(c) : '?';
  const auto pixels = [scale](std::string s) { return stb_easy_font_width(s.data()) * scale; };
  if (pixels(text) <= width) return text;
  while (!text.empty() && pixels(text + "..") > width) text.pop_back();
  return text + "..";
}

// Draws `text` in white with its top left corner at (x, y) of the RGB sheet.
void draw_text(std::vector<uint8_t>& rgb, int64_t sheet_w, int64_t sheet_h, int64_t x, int64_t y,
               std::string text, int64_t scale) {
  struct Vertex {
    float x, y, z;
    unsigned char color[4];
  };
  std::vector<Vertex> quads(4 * 64 * (text.size() + 1));  // the header's bound: < 64 quads a char
  unsigned char white[4] = {255, 255, 255, 255};
  const int count = stb_easy_font_print(0, 0, text.data(), white, quads.data(),
                                        static_cast<int>(quads.size() * sizeof(Vertex)));
  for (int q = 0; q < count; ++q) {
    const Vertex* v = &quads[4 * q];
    const float x0 = std::min({v[0].x, v[1].x, v[2].x, v[3].x});
    const float x1 = std::max({v[0].x, v[1].x, v[2].x, v[3].x});
    const float y0 = std::min({v[0].y, v[1].y, v[2].y, v[3].y});
    const float y1 = std::max({v[0].y, v[1].y, v[2].y, v[3].y});
    for (int64_t py = y + static_cast<int64_t>(y0 * scale); py < y + int64_t(y1 * scale); ++py) {
      for (int64_t px = x + static_cast<int64_t>(x0 * scale); px < x + int64_t(x1 * scale); ++px) {
        if (px < 0 || py < 0 || px >= sheet_w || py >= sheet_h) continue;
        std::fill_n(&rgb[3 * (py * sheet_w + px)], 3, uint8_t{255});
      }
    }
  }
}

void append_png(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), size);
}

}  // namespace

int64_t preview_sheet_pixels(int64_t n, int64_t height, int64_t width) {
  const Layout l = layout_of(n, 1, height, width);
  return l.sheet_w() * l.sheet_h();
}

PreviewSheet preview_sheet(const torch::Tensor& images, const std::vector<std::string>& captions) {
  const Layout l = layout_of(images.size(0), images.size(1), images.size(2), images.size(3));
  PreviewSheet sheet;
  sheet.width = l.sheet_w();
  sheet.height = l.sheet_h();
  if (sheet.width * sheet.height > kMaxSheetPixels) {
    throw core::Error(core::ErrorCode::kData,
                      "a sheet of " + std::to_string(l.n) + " samples would be " +
                          std::to_string(sheet.width) + "x" + std::to_string(sheet.height) +
                          " pixels, more than " + std::to_string(kMaxSheetPixels) + " in all",
                      "ask for fewer samples (--count)");
  }
  sheet.low = std::min(0.0, images.min().item<double>());
  sheet.high = std::max(1.0, images.max().item<double>());
  // The grey level of each value (in place on one copy: the batch may be a GiB), and the tile's
  // pixels channel by channel: [N, 3, H, W].
  torch::Tensor levels = images.sub(sheet.low);
  levels.mul_(255.0 / (sheet.high - sheet.low)).round_().clamp_(0, 255);
  levels = levels.to(torch::kUInt8);
  levels = l.channels == 3 ? levels : levels.narrow(1, 0, 1).expand({l.n, 3, l.height, l.width});
  levels = levels.permute({0, 2, 3, 1}).contiguous();  // [N, H, W, 3]
  const uint8_t* src = levels.data_ptr<uint8_t>();
  std::vector<uint8_t> rgb(static_cast<size_t>(3 * sheet.width * sheet.height), kBackground);
  for (int64_t i = 0; i < l.n; ++i) {
    const int64_t left = kGap + (i % l.columns) * (l.tile_w + kGap);
    const int64_t top = kGap + (i / l.columns) * (l.tile_h + l.caption_h + kGap);
    for (int64_t y = 0; y < l.tile_h; ++y) {
      for (int64_t x = 0; x < l.tile_w; ++x) {
        const uint8_t* p = src + 3 * ((i * l.height + y / l.zoom) * l.width + x / l.zoom);
        std::copy_n(p, 3, &rgb[3 * ((top + y) * sheet.width + left + x)]);
      }
    }
    const std::string caption = i < int64_t(captions.size()) ? captions[i] : std::string();
    draw_text(rgb, sheet.width, sheet.height, left, top + l.tile_h + l.text_scale,
              fitted_caption(caption, l.tile_w, l.text_scale), l.text_scale);
  }
  if (stbi_write_png_to_func(append_png, &sheet.png, static_cast<int>(sheet.width),
                             static_cast<int>(sheet.height), 3, rgb.data(),
                             static_cast<int>(3 * sheet.width)) == 0) {
    throw core::Error(core::ErrorCode::kRuntime,
                      "stb_image_write could not encode the preview sheet");
  }
  return sheet;
}

}  // namespace dptrain::data
