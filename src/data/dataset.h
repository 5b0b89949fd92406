// The Dataset interface the loader sees: a size, and a batch for a list of indices. A batch's
// images are float in [0, 1] (d2l's ToTensor), its labels int64 class indices.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace dptrain::data {

struct Batch {
  torch::Tensor images;  // [B, C, H, W] float32
  torch::Tensor labels;  // [B] int64
  int64_t size() const { return labels.size(0); }
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // `indices` are in [0, size()); the batch keeps their order.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const = 0;
};

}  // namespace dptrain::data
