// What a network is made of, for `dptrain info --model NAME`: its layers (the top-level modules,
// and one level into containers), each one's parameter and buffer counts, and the floating-point
// operations of one sample's forward, counted from the convolutions and matrix products that
// LibTorch actually runs (observed through its RecordFunction callbacks).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::model {

struct LayerSummary {
  std::string name;  // as in the state_dict: "0", "resnet_block1.0", "fc.1"
  std::string type;  // "Conv2d", "BatchNorm2d", "Residual", ...
  int64_t parameters = 0;
  int64_t buffers = 0;  // elements
};

struct ModelSummary {
  std::vector<LayerSummary> layers;
  int64_t parameters = 0;
  int64_t buffers = 0;
  std::vector<int64_t> input_shape;  // one sample's
  std::vector<int64_t> output_shape;
  // Multiply-adds counted twice, of one sample's forward in eval mode.
  int64_t convolution_flops = 0;
  int64_t matmul_flops = 0;
};

// Runs one forward of `input_shape` (batch 1) through `model` in eval mode, without gradients.
ModelSummary summarize(torch::nn::AnyModule& model, const std::vector<int64_t>& input_shape);

std::string format_summary(const std::string& name, const ModelSummary& summary);

}  // namespace dptrain::model
