// Where tensors sit in one flat buffer (see flat_buffer.h): in a given order, each starting on a
// 64-byte boundary as the allocator would place it alone, padded at the end with zeros to W equal
// shards of ceil(N / W) elements (W = 1: no end padding). The alignment is not for speed: some
// kernels sum in an order that follows their operands' alignment (LibTorch 2.x's oneDNN 1x1
// convolution, dptrain's dense layer, on a weight that is not 16-byte aligned), so a parameter
// viewed from the buffer must sit as a tensor of its own would, or ZeRO's steps part from stage
// 0's in the last bit. The gaps are zeros that no gradient, norm or step changes. ZeRO lays
// the parameters out in the gradient buckets' order, so that each bucket is one contiguous range
// and a rank's gradients come straight out of the flat gradients. Rank r owns elements [r * S, (r +
// 1) * S), whatever tensors they belong to: shards split tensors, so that every rank holds the same
// share (not whole tensors per rank, as PyTorch's ZeroRedundancyOptimizer does).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace dptrain::parallel {

class FlatLayout {
 public:
  FlatLayout() = default;  // nothing laid out
  // `numels`: each parameter's size, in the model's order; `order`: the parameter indices in flat
  // order (every index once); `element_size`: bytes per element, which the alignment needs.
  FlatLayout(const std::vector<int64_t>& numels, std::vector<size_t> order, int world, int rank,
             int64_t element_size);

  // Where every tensor starts in a buffer: the CPU allocator's alignment (c10's gAlignment).
  static constexpr int64_t kAlignBytes = 64;

  int64_t numel() const { return numel_; }              // N: the parameters and the gaps between
  int64_t shard_numel() const { return shard_numel_; }  // S = ceil(N / W)
  int64_t padded_numel() const { return shard_numel_ * world_; }
  int64_t shard_begin() const { return shard_numel_ * rank_; }
  int world() const { return world_; }
  int rank() const { return rank_; }
  const std::vector<size_t>& order() const { return order_; }
  // Where parameter `param` (model order) starts in the flat.
  int64_t offset(size_t param) const { return offsets_.at(param); }
  int64_t numel_of(size_t param) const { return numels_.at(param); }

  // Per-parameter tensors (model order, any shapes), each at its offset; zeros in the gaps and the
  // end padding.
  torch::Tensor flatten(const std::vector<torch::Tensor>& per_param) const;
  // Views of `flat` shaped like each tensor of `like` (model order): flatten's inverse.
  std::vector<torch::Tensor> unflatten(const torch::Tensor& flat,
                                       const std::vector<torch::Tensor>& like) const;
  // This rank's shard of a padded flat tensor (a view).
  torch::Tensor own_shard(const torch::Tensor& flat) const;

 private:
  std::vector<size_t> order_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> numels_;
  int64_t numel_ = 0;
  int64_t shard_numel_ = 0;
  int world_ = 1;
  int rank_ = 0;
};

}  // namespace dptrain::parallel
