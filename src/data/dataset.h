// The Dataset interface the loaders see: a size, a sample shape, and a batch for a list of
// indices written into buffers the caller owns (fresh, or a reused pinned staging buffer). A
// batch's images are float in [0, 1] (d2l's ToTensor), its labels int64 class indices.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dptrain::data {

class CropFlip;

struct Batch {
  torch::Tensor images;  // [B, C, H, W] float32
  torch::Tensor labels;  // [B] int64
  int64_t size() const { return labels.size(0); }
};

// A split as whole tensors, for keeping it on the training device: batch k is
// decode(samples[indices]) with labels[indices].
struct StoredSplit {
  torch::Tensor samples;  // [N, ...] in the stored dtype
  torch::Tensor labels;   // [N] integer class indices
  // A float table that turns uint8 samples into batch values, [256] or one per channel [C, 256];
  // undefined when the samples already are the float values.
  torch::Tensor decode_table;
  // Random crops and flips drawn anew each epoch (data/crop_flip.h): then `samples` are
  // prepared for them. Null when nothing draws.
  std::shared_ptr<const CropFlip> augment;
};

struct RawSample {
  torch::Tensor pixels;  // uint8 [C, H, W]
  int64_t label = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // One sample's shape, [C, H, W].
  virtual std::vector<int64_t> sample_shape() const = 0;
  // Writes the samples `indices` (each in [0, size())), in order, into the first rows of `images`
  // (contiguous float32 CPU [>= n, C, H, W]) and `labels` (contiguous int64 CPU [>= n]).
  // Called from loader worker threads: must not modify the dataset.
  virtual void fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                          torch::Tensor& labels) const = 0;
  // The same as epoch `epoch` draws it: only random transforms depend on the epoch, so by default
  // fill_batch. The loaders call this one.
  virtual void fill_epoch_batch(c10::ArrayRef<int64_t> indices, int64_t epoch,
                                torch::Tensor& images, torch::Tensor& labels) const {
    (void)epoch;
    fill_batch(indices, images, labels);
  }
  // The whole split as tensors; by default every sample decoded to float.
  virtual StoredSplit stored_split() const;
  // Sample i as stored, uint8 [C, H, W], and its label: what transforms start from. A source that
  // keeps no such form (a test's) throws.
  virtual RawSample raw_sample(int64_t i) const;
  // What names sample i in an error: its file, or its index.
  virtual std::string sample_name(int64_t i) const { return "sample " + std::to_string(i); }

  // A freshly allocated batch of these indices.
  Batch get_batch(c10::ArrayRef<int64_t> indices) const;
};

// fill_batch's contract on the caller's buffers for `n` samples of `values` values each; `who`
// names the data set in the internal error.
void check_batch_buffers(const torch::Tensor& images, const torch::Tensor& labels, int64_t n,
                         int64_t values, const char* who);

}  // namespace dptrain::data
