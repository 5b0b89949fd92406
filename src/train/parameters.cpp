#include "train/parameters.h"

#include <algorithm>
#include <numeric>

namespace dptrain::train {

std::vector<torch::Tensor> model_state(parallel::Backend& backend) {
  std::vector<torch::Tensor> state = backend.parameters();
  for (auto& b : backend.buffers()) state.push_back(b);
  return state;
}

std::vector<torch::Tensor> host_copies(parallel::Backend& backend) {
  std::vector<torch::Tensor> copies;
  for (const auto& t : model_state(backend)) {
    copies.push_back(t.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true));
  }
  return copies;
}

void copy_into_model(parallel::Backend& backend, const std::vector<torch::Tensor>& values) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> state = model_state(backend);
  for (size_t i = 0; i < state.size(); ++i) state[i].copy_(values[i]);
}

model::StateDict named_host_copies(parallel::Backend& backend,
                                   const std::vector<model::StateSpec>& specs) {
  const std::vector<torch::Tensor> copies = host_copies(backend);
  TORCH_CHECK(copies.size() == specs.size(), "named_host_copies: ", copies.size(), " tensors for ",
              specs.size(), " names");
  std::vector<size_t> order(copies.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return specs[a].state_dict_position < specs[b].state_dict_position;
  });
  model::StateDict dict;
  for (const size_t i : order) dict.emplace_back(specs[i].name, copies[i]);
  return dict;
}

}  // namespace dptrain::train
