// The weights `evaluate`, `predict` and `train --init-from` start from: a state_dict (dptrain's
// model.pt, or Python's torch.save(net.state_dict(), path)) or a dptrain checkpoint.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "core/fs.h"
#include "model/state_dict.h"

namespace dptrain::train {

// The file's model state (parameters, then buffers) in the order of `specs`, matched by name. An
// I/O error naming `path` when it is neither kind of file; a config error when it holds another
// model (see model::match_state).
std::vector<torch::Tensor> read_model_file(const std::filesystem::path& path,
                                           const std::vector<model::StateSpec>& specs);
// The same from `file`, already open (the bytes every rank agreed on); `path` names it. What the
// file may make its reader build is bounded by `specs` (model::decode_limits).
std::vector<torch::Tensor> read_model_file(const std::filesystem::path& path,
                                           const std::shared_ptr<const core::ReadOnlyFile>& file,
                                           const std::vector<model::StateSpec>& specs);

}  // namespace dptrain::train
