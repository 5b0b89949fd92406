// A backend's parameters moved to and from the host: early stopping keeps the best epoch's, a
// checkpoint restores them, and model.pt saves the final ones.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "model/state_dict.h"
#include "parallel/backend.h"

namespace dptrain::train {

// Host copies that later steps do not change (a CPU parameter is copied too, not shared).
std::vector<torch::Tensor> host_copies(parallel::Backend& backend);

// Writes `values` into the backend's parameters in place (same order and shapes), on every rank.
void copy_into_parameters(parallel::Backend& backend, const std::vector<torch::Tensor>& values);

// Host copies under the model's names (`specs`, in the backend's order): model.pt's contents.
model::StateDict named_host_copies(parallel::Backend& backend,
                                   const std::vector<model::ParameterSpec>& specs);

}  // namespace dptrain::train
