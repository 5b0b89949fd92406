#include "parallel/flat_buffer.h"

#include <numeric>

#include "core/error.h"

namespace dptrain::parallel {

FlatBuffer::FlatBuffer(FlatLayout layout, const torch::TensorOptions& options)
    : layout_(std::move(layout)), options_(options.requires_grad(false)) {
  allocate_zeros();
}

FlatBuffer FlatBuffer::adopt(const std::vector<torch::Tensor>& tensors, FlatLayout layout,
                             const char* what) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(!tensors.empty(), "FlatBuffer::adopt: no tensors");
  for (const auto& t : tensors) {
    if (t.scalar_type() != tensors[0].scalar_type() || t.device() != tensors[0].device()) {
      throw core::Error(
          core::ErrorCode::kNotSupported,
          std::string(what) + ": parameters of several dtypes or devices in one model",
          "keep the model's parameters in one dtype on one device");
    }
  }
  FlatBuffer buffer;
  buffer.layout_ = std::move(layout);
  buffer.options_ = tensors[0].options().requires_grad(false);
  std::vector<torch::Tensor> values;
  for (const auto& t : tensors) values.push_back(t.detach());
  buffer.flat_ = buffer.layout_.flatten(values);
  const std::vector<torch::Tensor> places = buffer.views(tensors);
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].set_data(places[i]);
  return buffer;
}

void FlatBuffer::allocate_zeros() {
  // Zeros: the padding of a reduce-scattered buffer is summed and must stay zero.
  if (!flat_.defined()) flat_ = torch::zeros({layout_.padded_numel()}, options_);
}

std::vector<int64_t> numels_of(const std::vector<torch::Tensor>& tensors) {
  std::vector<int64_t> sizes;
  for (const auto& t : tensors) sizes.push_back(t.numel());
  return sizes;
}

std::vector<size_t> model_order(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  return order;
}

}  // namespace dptrain::parallel
