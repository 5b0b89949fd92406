#include "train/model_file.h"

#include "core/error.h"
#include "core/fs.h"
#include "core/terminal.h"
#include "run/checkpoint_format.h"
#include "serialize/torch_file.h"
#include "serialize/zip_reader.h"

namespace dptrain::train {
namespace {

// A file refused for holding more than the model can need is most often one of another model.
const char* const kHint =
    "give a run's model.pt or one of its checkpoints, or a file of Python's "
    "torch.save(net.state_dict(), path), of the experiment's model (model.name)";

}  // namespace

std::vector<torch::Tensor> read_model_file(const std::filesystem::path& path,
                                           const std::vector<model::StateSpec>& specs) {
  return read_model_file(path, std::make_shared<const core::ReadOnlyFile>(path), specs);
}

std::vector<torch::Tensor> read_model_file(const std::filesystem::path& path,
                                           const std::shared_ptr<const core::ReadOnlyFile>& file,
                                           const std::vector<model::StateSpec>& specs) {
  serialize::ValuePtr root;
  try {
    root = serialize::decode_torch_file(serialize::file_source(*file), model::decode_limits(specs));
  } catch (const core::Error&) {
    throw;  // the file could not be read (it shrank meanwhile): its own message names it
  } catch (const serialize::CodeArchiveError& e) {
    throw core::Error(core::ErrorCode::kIo,
                      path.string() + ": " + e.what() + "; dptrain does not open such files",
                      kHint);
  } catch (const serialize::NotAnArchiveError& e) {
    throw core::Error(core::ErrorCode::kIo, path.string() + ": " + e.what(), kHint);
  } catch (const std::exception& e) {
    throw core::Error(
        core::ErrorCode::kIo,
        path.string() + ": neither a state_dict nor a dptrain checkpoint: " + core::message_of(e),
        kHint);
  }
  const std::optional<run::CheckpointWeights> weights = run::checkpoint_weights(path, *root);
  if (!weights) {
    model::StateDict dict;
    try {
      dict = model::state_dict_of(*root);
    } catch (const std::exception& e) {
      throw core::Error(
          core::ErrorCode::kIo,
          path.string() + ": neither a state_dict nor a dptrain checkpoint: " + core::message_of(e),
          kHint);
    }
    return model::match_state(dict, specs, path.string());
  }
  // A checkpoint keeps the model state in the model's order; their names are the model's.
  model::StateDict dict;
  for (size_t i = 0; i < weights->state.size(); ++i) {
    const std::string name = i < specs.size() ? specs[i].name : "parameter " + std::to_string(i);
    dict.emplace_back(name, weights->state[i]);
  }
  return model::match_state(
      dict, specs,
      path.string() + " (a checkpoint of model \"" + core::printable(weights->model) + "\")");
}

}  // namespace dptrain::train
