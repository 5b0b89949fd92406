// A backend's model state (its parameters, then its buffers, in the model's order) moved to and
// from the host: early stopping keeps the best epoch's, a checkpoint restores them, and model.pt
// saves the final ones.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "model/state_dict.h"
#include "parallel/backend.h"

namespace dptrain::train {

// The parameters, then the buffers: the order of model::state_specs().
std::vector<torch::Tensor> model_state(parallel::Backend& backend);

// Host copies of model_state() that later steps do not change (a CPU tensor is copied too).
std::vector<torch::Tensor> host_copies(parallel::Backend& backend);

// Writes `values` into the backend's model state in place (same order and shapes), on every rank.
void copy_into_model(parallel::Backend& backend, const std::vector<torch::Tensor>& values);

// Host copies under the model's names (`specs`, in model_state()'s order), in the order of
// PyTorch's state_dict(): model.pt's contents.
model::StateDict named_host_copies(parallel::Backend& backend,
                                   const std::vector<model::StateSpec>& specs);

}  // namespace dptrain::train
