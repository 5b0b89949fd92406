#include "parallel/flat_layout.h"

#include "core/error.h"

namespace dptrain::parallel {

FlatLayout::FlatLayout(const std::vector<int64_t>& numels, std::vector<size_t> order, int world,
                       int rank, int64_t element_size)
    : order_(std::move(order)),
      offsets_(numels.size(), -1),
      numels_(numels),
      world_(world),
      rank_(rank) {
  if (element_size <= 0 || kAlignBytes % element_size != 0) {
    throw core::Error(core::ErrorCode::kRuntime,
                      "flat layout: elements of " + std::to_string(element_size) + " bytes");
  }
  const int64_t align = kAlignBytes / element_size;
  for (const size_t param : order_) {
    if (param >= numels.size() || offsets_[param] >= 0) {
      throw core::Error(
          core::ErrorCode::kRuntime,
          "flat layout: parameter " + std::to_string(param) + " is out of range or listed twice");
    }
    numel_ = (numel_ + align - 1) / align * align;
    offsets_[param] = numel_;
    numel_ += numels[param];
  }
  if (order_.size() != numels.size()) {
    throw core::Error(core::ErrorCode::kRuntime, "flat layout: a parameter is missing");
  }
  shard_numel_ = (numel_ + world_ - 1) / world_;
}

torch::Tensor FlatLayout::flatten(const std::vector<torch::Tensor>& per_param) const {
  torch::Tensor flat = torch::zeros({padded_numel()}, per_param.at(0).options());
  for (const size_t param : order_) {
    const torch::Tensor& t = per_param.at(param);
    flat.narrow(0, offsets_[param], t.numel()).copy_(t.reshape({-1}));
  }
  return flat;
}

std::vector<torch::Tensor> FlatLayout::unflatten(const torch::Tensor& flat,
                                                 const std::vector<torch::Tensor>& like) const {
  std::vector<torch::Tensor> views;
  for (size_t param = 0; param < like.size(); ++param) {
    views.push_back(flat.narrow(0, offsets_.at(param), like[param].numel()).view_as(like[param]));
  }
  return views;
}

torch::Tensor FlatLayout::own_shard(const torch::Tensor& flat) const {
  return flat.narrow(0, shard_begin(), shard_numel_);
}

}  // namespace dptrain::parallel
