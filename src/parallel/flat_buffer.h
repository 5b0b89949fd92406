// The one "tensors as views of a flat buffer" type that dp, ddp and ZeRO share: a flat tensor laid
// out by a FlatLayout, whose tensors are narrow views of it. A whole model then moves between
// devices in one copy, its gradients add or all-reduce in one kernel per range, and a ZeRO rank's
// shard is one slice. (PyTorch's reducer can keep .grad a view of its bucket likewise:
// gradient_as_bucket_view.)
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "parallel/flat_layout.h"

namespace dptrain::parallel {

class FlatBuffer {
 public:
  FlatBuffer() = default;
  // Zeros for tensors laid out by `layout`, padding included.
  FlatBuffer(FlatLayout layout, const torch::TensorOptions& options);
  // Moves `tensors` (model order, one dtype) into a new buffer: their values are copied in and each
  // tensor's data becomes its view, so that writing the buffer writes the tensors. `what` names
  // them in the error for mixed dtypes.
  static FlatBuffer adopt(const std::vector<torch::Tensor>& tensors, FlatLayout layout,
                          const char* what);

  const FlatLayout& layout() const { return layout_; }
  const torch::Tensor& flat() const { return flat_; }  // undefined while released
  // Elements [begin, begin + numel) of the buffer.
  torch::Tensor range(int64_t begin, int64_t numel) const { return flat_.narrow(0, begin, numel); }
  // Tensor `index`'s elements, flat.
  torch::Tensor slot(size_t index) const {
    return range(layout_.offset(index), layout_.numel_of(index));
  }
  // Views shaped like each tensor of `like` (model order).
  std::vector<torch::Tensor> views(const std::vector<torch::Tensor>& like) const {
    return layout_.unflatten(flat_, like);
  }
  torch::Tensor own_shard() const { return layout_.own_shard(flat_); }

  // Frees the memory until allocate_zeros() (ZeRO stage 2 keeps no whole gradients between steps).
  void release() { flat_ = torch::Tensor(); }
  void allocate_zeros();
  int64_t bytes() const {
    return flat_.defined() ? flat_.numel() * static_cast<int64_t>(flat_.element_size()) : 0;
  }

 private:
  FlatLayout layout_;
  torch::TensorOptions options_;
  torch::Tensor flat_;
};

// The sizes of `tensors`, for a FlatLayout.
std::vector<int64_t> numels_of(const std::vector<torch::Tensor>& tensors);
// 0, 1, ..., n - 1: tensors in the model's own order.
std::vector<size_t> model_order(size_t n);

}  // namespace dptrain::parallel
