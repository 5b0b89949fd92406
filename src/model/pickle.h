// The part of Python's pickle format that PyTorch's files use: a checker that walks any pickle
// stream and refuses operands that run past its end (LibTorch's own unpickler reserves a declared
// length before reading it), and a reader for what `torch.save(state_dict)` writes: dicts,
// OrderedDicts, tuples, lists, numbers, strings and tensors rebuilt from storages. Anything else
// (an arbitrary class, a function call) is refused, as Python's `weights_only=True` refuses it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dptrain::model::pickle {

// A malformed or unsupported stream; the message says what and where (byte offset).
class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every opcode of protocols 0 to 5 is known, and every operand fits in `bytes`, up to STOP.
void check_operands(const std::string& bytes);

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kTensor };
  Kind kind = Kind::kNone;
  int64_t integer = 0;                                 // kBool, kInt
  double real = 0;                                     // kFloat
  std::string text;                                    // kString; kGlobal: "module.name"
  std::vector<ValuePtr> items;                         // kTuple, kList
  std::vector<std::pair<ValuePtr, ValuePtr>> entries;  // kDict, in insertion order
  torch::Tensor tensor;                                // kTensor
  // Set once a container is inside another; from then on it may not change, so that `depth`
  // stays true and no container can come to hold itself.
  bool nested = false;
  int depth = 0;  // 0 for a scalar; a container: 1 + its deepest item's depth
};

// Containers nest at most this deep (a deeper one is refused: freeing it would recurse as deep).
constexpr int kMaxDepth = 100;

// A storage's bytes as a 1-D CPU tensor of `numel` elements of `dtype`, found by the record key
// the stream names ("0", "1", ...).
using StorageLoader =
    std::function<torch::Tensor(const std::string& key, at::ScalarType dtype, int64_t numel)>;

// The object the stream builds.
ValuePtr read(const std::string& bytes, const StorageLoader& load_storage);

// The stream `torch.save` writes for an OrderedDict of name -> tensor (protocol 2), with tensor i
// in storage record "i"; the tensors are contiguous and laid out by the caller.
std::string write_tensor_dict(const std::vector<std::pair<std::string, torch::Tensor>>& entries);

// "torch.FloatStorage" -> kFloat, ...; throws PickleError for any other name.
at::ScalarType storage_dtype(const std::string& global);

}  // namespace dptrain::model::pickle
