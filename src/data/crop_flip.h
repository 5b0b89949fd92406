// The training transforms most runs take, random_crop and random_horizontal_flip (after any
// resize and center_crop, before any normalize), and the eval lists of resizes, centre crops and
// normalizes, computed as one pass instead of an operation per transform, on either placement:
// - the host path renders a sample straight into its batch row: each output pixel read through
//   the crop box, the flip and the padding (by index, never padded in memory) and turned into its
//   batch value by a table (ToTensor's v / 255, then the closing normalizes, computed by the
//   generic path's own operations): a 28x28 sample in about a microsecond, where the transforms
//   one by one took ten (data/transformed_dataset.h falls back to them for anything else);
// - the device placement (data.placement "device") keeps the split with what comes before the
//   random transforms and the crop's padding applied once (uint8: a quarter of the floats it
//   would otherwise keep), draws every sample's box and flip for an epoch at its start and
//   uploads them with the epoch's order; a batch is then one gather by index on the device, rows
//   and columns at once, and the same table. No host work per step.
// Both draw from the sample's own generator exactly as data/transforms.h does, with the
// distributions torch's CPU kernels call (no tensor per draw), so every batch is the generic
// path's bit for bit. What does not fit (a random_resized_crop, a transform after the random ones
// other than a normalize) is refused by `plan`, which says why.
#pragma once

#include <torch/torch.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "config/transforms.h"

namespace dptrain::data {

class CropFlip {
 public:
  // One sample's draws: its box's corner in the padded sample, and whether it is mirrored.
  struct Draw {
    int64_t top = 0, left = 0;
    bool flip = false;
  };
  // The epoch's draws for some samples, in their order: int64 [M] each (flips 0 or 1).
  struct Draws {
    torch::Tensor tops, lefts, flips;
    Draws slice(int64_t begin, int64_t end) const;
    Draws to(torch::Device device) const;
  };

  // nullopt, with the reason in `why` ("data.train_transforms[2] (random_resized_crop) ..."),
  // when the list is not of that shape; `key` names the list. A list without the random ones
  // (resizes, centre crops, normalizes: an eval list) fits too, and draws nothing.
  static std::optional<CropFlip> plan(const std::vector<config::TransformSpec>& transforms,
                                      int64_t seed, const std::string& key, std::string* why);
  bool draws() const { return crop_ || flip_; }
  // Why keeping a split of stored samples of `stored` [C, H, W] prepared on the device costs
  // too much (a padding that makes the kept samples more than four times the crop's pixels:
  // the host pads by index at no cost), or nothing when it does not. `key` names the list.
  std::string device_cost(const std::vector<int64_t>& stored, const std::string& key) const;

  // float32 [channels, 256]: entry [c][v] is the batch value of byte v in channel c.
  torch::Tensor value_table(int64_t channels) const;

  // The host path: sample `index` of epoch `epoch` from `raw` (uint8 [C, H, W] as stored) into
  // `out` (its batch row, float32, of `shape` [C, h, w]). False, writing nothing, for a sample
  // the one pass does not take (another shape, a padding wider than a reflect allows): the
  // transforms one by one then compute it or say what is wrong. `table` is value_table(C)'s.
  bool render(const torch::Tensor& raw, int64_t index, int64_t epoch, c10::IntArrayRef shape,
              const float* table, float* out) const;

  // The device placement: sample `raw` through the part applied once, what the device keeps.
  torch::Tensor prepare(const torch::Tensor& raw) const;
  // The draws of samples `indices` in epoch `epoch`, for prepared samples of height x width.
  Draws draw(c10::ArrayRef<int64_t> indices, int64_t epoch, int64_t height, int64_t width) const;
  // The batch of the prepared samples `samples` ([N, C, H, W] uint8, on the device) at
  // `indices`, cropped and flipped as `draws` (on the same device) say: uint8 [B, C, h, w].
  torch::Tensor gather(const torch::Tensor& samples, const torch::Tensor& indices,
                       const Draws& draws) const;

 private:
  CropFlip() = default;
  Draw draw_one(int64_t index, int64_t epoch, int64_t height, int64_t width) const;
  // What comes before the random transforms, applied to `raw`.
  torch::Tensor fixed_part(const torch::Tensor& raw) const;
  // The size random_crop_padding makes of a sample of height x width (itself without a crop).
  std::array<int64_t, 2> padded_size(int64_t height, int64_t width) const;
  // Where each of `size` output positions of one axis reads in a sample's axis of `n`, or -1
  // for the fill: through the box (from `start`), the mirror, and the crop's paddings.
  bool source_positions(int64_t n, int64_t before, int64_t after, int64_t start, int64_t size,
                        bool mirrored, int64_t padded, std::vector<int64_t>& out) const;

  int64_t seed_ = 0;
  std::vector<config::TransformSpec> fixed_;    // applied first, in order
  std::optional<config::TransformSpec> crop_;   // random_crop
  size_t crop_at_ = 0;                          // its place in the list
  std::optional<config::TransformSpec> flip_;   // random_horizontal_flip
  bool flip_first_ = false;                     // the flip before the crop
  std::vector<config::TransformSpec> closing_;  // the normalizes at the end
};

}  // namespace dptrain::data
