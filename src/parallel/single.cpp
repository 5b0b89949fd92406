#include "parallel/single.h"

namespace dptrain::parallel {

SingleDevice::SingleDevice(torch::nn::AnyModule model, torch::Device device)
    : model_(std::move(model)), device_(device) {
  model_.ptr()->to(device_);
}

torch::Tensor SingleDevice::forward(const torch::Tensor& input) {
  return model_.forward(input);
}

}  // namespace dptrain::parallel
