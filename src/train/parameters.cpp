#include "train/parameters.h"

namespace dptrain::train {

std::vector<torch::Tensor> host_copies(parallel::Backend& backend) {
  std::vector<torch::Tensor> copies;
  for (const auto& p : backend.parameters()) {
    copies.push_back(p.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true));
  }
  return copies;
}

void copy_into_parameters(parallel::Backend& backend, const std::vector<torch::Tensor>& values) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> params = backend.parameters();
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
}

model::StateDict named_host_copies(parallel::Backend& backend,
                                   const std::vector<model::ParameterSpec>& specs) {
  const std::vector<torch::Tensor> copies = host_copies(backend);
  model::StateDict dict;
  for (size_t i = 0; i < copies.size() && i < specs.size(); ++i) {
    dict.emplace_back(specs[i].name, copies[i]);
  }
  return dict;
}

}  // namespace dptrain::train
