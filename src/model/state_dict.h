// model.pt: a model's parameters and buffers under PyTorch's names, in the file that Python's
// `torch.load(path, weights_only=True)` reads as a dict and `net.load_state_dict` accepts; and
// the reverse, reading what Python's `torch.save(net.state_dict(), path)` wrote (an OrderedDict,
// which LibTorch's own unpickler cannot read, hence serialize/).
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serialize/pickle.h"

namespace dptrain::model {

// Name -> tensor, in the model's order.
using StateDict = std::vector<std::pair<std::string, torch::Tensor>>;

// The bytes of a torch.save file (a zip archive: data.pkl and one record per tensor), with the
// experiment's record when one is given (see save_state_dict).
std::string encode_state_dict(const StateDict& dict, const std::string& experiment = "");
// Throws std::runtime_error saying what is wrong. The tensors are views of the file's storages,
// unchecked against any model: match_state checks their shapes before anyone copies them.
StateDict decode_state_dict(const std::string& bytes);
// The same from a decoded file's object: a dict of name -> tensor.
StateDict state_dict_of(const serialize::Value& root);

// Written atomically. A non-empty `experiment` (the run's resolved config, JSON text) goes beside
// the pickle as the record kExperimentRecord, which torch.load leaves alone: evaluate and predict
// take the model's classes, channels and size from it when the model file travels alone.
inline constexpr char kExperimentRecord[] = "dptrain_experiment.json";
void save_state_dict(const std::filesystem::path& path, const StateDict& dict,
                     const std::string& experiment = "");
// The experiment a model file records; nothing when it has none or is no readable model file
// (reading its weights then says what is wrong). An I/O error naming the file when the record is
// there but damaged or larger than any experiment.
std::optional<std::string> state_dict_experiment(const std::filesystem::path& path);

// A tensor of a model's state as the model declares it: its name and shape, and where PyTorch's
// state_dict() lists it (module by module: each one's parameters, then its buffers).
struct StateSpec {
  std::string name;
  std::vector<int64_t> shape;
  size_t state_dict_position = 0;
};
// The model's parameters, then its buffers, each in LibTorch's order (parameters() and
// buffers()): the order of a backend's model state.
std::vector<StateSpec> state_specs(const torch::nn::Module& model);

// What a file holding this model's state may make its reader build (see serialize::DecodeLimits):
// as many tensors, dimensions and storage bytes as a checkpoint's copies of the state need (the
// state, early stopping's best weights, two optimizer tensors per parameter), at up to 8 bytes an
// element, and some slack for the generator's state.
serialize::DecodeLimits decode_limits(const std::vector<StateSpec>& specs);
// The same from the model's state tensors themselves.
serialize::DecodeLimits decode_limits(const std::vector<torch::Tensor>& state);

// `dict`'s tensors in the order of `specs`. A config error naming `source` lists every missing,
// unexpected and mis-shaped key (with both shapes) when they do not match.
std::vector<torch::Tensor> match_state(const StateDict& dict, const std::vector<StateSpec>& specs,
                                       const std::string& source);

}  // namespace dptrain::model
