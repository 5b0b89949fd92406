// A contact sheet of a batch, for a person to look at what training sees: each sample a tile,
// scaled up by a whole factor to at least 64 pixels a side (nearest neighbour, so no pixel is
// invented), its caption printed under it, encoded as PNG.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::data {

struct PreviewSheet {
  std::string png;
  int64_t width = 0, height = 0;
  // The values shown black and white: [0, 1] for ToTensor's range, else the batch's own smallest
  // and largest values (a normalize moved them), stretched over the grey levels.
  double low = 0, high = 1;
};

// The most pixels a sheet may have (about 200 MB of RGB).
constexpr int64_t kMaxSheetPixels = int64_t{64} << 20;

// The pixels of the sheet of `n` samples of `height` x `width`, known before any is made.
int64_t preview_sheet_pixels(int64_t n, int64_t height, int64_t width);

// `images`: float32 [N, C, H, W] on the CPU (C 1 or 3; another C shows its first channel);
// `captions`: N lines, shown in ASCII (other bytes as '?'), cut to the tile's width. A data error
// when the sheet would have more than kMaxSheetPixels.
PreviewSheet preview_sheet(const torch::Tensor& images, const std::vector<std::string>& captions);

}  // namespace dptrain::data
