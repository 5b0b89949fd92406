#include "train/model_file.h"

#include "core/error.h"
#include "core/fs.h"
#include "train/checkpoint.h"

namespace dptrain::train {

std::vector<torch::Tensor> read_model_file(const std::filesystem::path& path,
                                           const std::vector<model::ParameterSpec>& specs) {
  const std::string bytes = core::read_text_file(path);  // names a missing file or a directory
  std::string as_state_dict;
  try {
    return model::match_parameters(model::decode_state_dict(bytes), specs, path.string());
  } catch (const core::Error&) {
    throw;  // a state_dict of another model
  } catch (const std::exception& e) {
    as_state_dict = core::message_of(e);
  }
  CheckpointWeights weights;
  try {
    weights = read_checkpoint_weights(path);
  } catch (const core::Error& e) {
    throw core::Error(core::ErrorCode::kIo,
                      path.string() + ": neither a state_dict (" + as_state_dict +
                          ") nor a dptrain checkpoint (" + e.what() + ")",
                      "give a run's model.pt or one of its checkpoints, or a file of Python's "
                      "torch.save(net.state_dict(), path)");
  }
  // A checkpoint keeps the parameters in the model's order; their names are the model's.
  model::StateDict dict;
  for (size_t i = 0; i < weights.parameters.size(); ++i) {
    const std::string name = i < specs.size() ? specs[i].name : "parameter " + std::to_string(i);
    dict.emplace_back(name, weights.parameters[i]);
  }
  return model::match_parameters(
      dict, specs, path.string() + " (a checkpoint of model \"" + weights.model + "\")");
}

}  // namespace dptrain::train
