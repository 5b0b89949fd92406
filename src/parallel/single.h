// The single backend: one model on one device (a CPU or one GPU), world size 1.
#pragma once

#include "parallel/backend.h"

namespace dptrain::parallel {

class SingleDevice : public Backend {
 public:
  SingleDevice(torch::nn::AnyModule model, torch::Device device);

  std::string name() const override { return "single"; }
  std::vector<torch::Device> devices() const override { return {device_}; }
  torch::Device input_device() const override { return device_; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }

  std::vector<torch::Tensor> parameters() override { return model_.ptr()->parameters(); }
  std::vector<torch::Tensor> buffers() override { return model_.ptr()->buffers(); }
  void set_training(bool training) override { model_.ptr()->train(training); }
  torch::Tensor forward(const torch::Tensor& input) override;
  void finish_backward() override {}  // one copy: its gradients are already complete
  void all_reduce_sum(std::vector<double>& /*values*/) override {}

 private:
  torch::nn::AnyModule model_;
  torch::Device device_;
};

}  // namespace dptrain::parallel
