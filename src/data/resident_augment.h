// Random training transforms on a split kept on the training device (data.placement "device"),
// with no host work per step: what comes before the first random transform (resize,
// center_crop) and random_crop's padding are applied once to every sample as stored (uint8);
// random_crop's box and random_horizontal_flip's coin are drawn for every sample of an epoch at
// the epoch's start, from the sample's own generator exactly as the host path draws them
// (data/transforms.h), and uploaded with the epoch's order; a batch is then one gather by index
// on the device, rows and columns at once, and one lookup in a table of the batch value of every
// byte (ToTensor's v / 255, then the closing normalizes, computed by the host's own operations).
// So the device's batches are the host path's bit for bit. What does not fit that shape (a
// random_resized_crop, a transform after the random ones other than a normalize) stays on the
// host, and `plan` says why.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "config/transforms.h"

namespace dptrain::data {

class ResidentAugment {
 public:
  // The epoch's draws for some samples, in their order: int64 [M] each (flips 0 or 1).
  struct Draws {
    torch::Tensor tops, lefts, flips;
    Draws slice(int64_t begin, int64_t end) const;
    Draws to(torch::Device device) const;
  };

  // nullopt, with the reason in `why` ("data.train_transforms[2] (random_resized_crop) ..."),
  // when the list cannot run on the device so; `key` names the list.
  static std::optional<ResidentAugment> plan(const std::vector<config::TransformSpec>& transforms,
                                             int64_t seed, const std::string& key,
                                             std::string* why);

  // Sample `raw` (uint8 [C, H, W] as stored) through the part applied once: what the device keeps.
  torch::Tensor prepare(const torch::Tensor& raw) const;
  // float32 [channels * 256]: entry c * 256 + v is the batch value of byte v in channel c.
  torch::Tensor value_table(int64_t channels) const;
  // The draws of samples `indices` in epoch `epoch`, as the host path draws them, for prepared
  // samples of height x width.
  Draws draw(c10::ArrayRef<int64_t> indices, int64_t epoch, int64_t height, int64_t width) const;
  // The batch of the prepared samples `samples` ([N, C, H, W] uint8, on the device) at
  // `indices`, cropped and flipped as `draws` (on the same device) say: uint8 [B, C, h, w].
  torch::Tensor gather(const torch::Tensor& samples, const torch::Tensor& indices,
                       const Draws& draws) const;

 private:
  ResidentAugment() = default;

  int64_t seed_ = 0;
  std::vector<config::TransformSpec> fixed_;    // applied once, in order
  std::optional<config::TransformSpec> crop_;   // random_crop
  std::optional<config::TransformSpec> flip_;   // random_horizontal_flip
  bool flip_first_ = false;                     // the flip before the crop
  std::vector<config::TransformSpec> closing_;  // the normalizes at the end
};

}  // namespace dptrain::data
