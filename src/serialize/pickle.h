// The part of Python's pickle format that PyTorch's files use, read and written by code of our
// own: dicts, OrderedDicts, lists, tuples, numbers, strings, booleans, None and tensors rebuilt
// from storages. Anything else (an arbitrary class, a function call) is refused, as Python's
// `weights_only=True` refuses it. The reader checks every operand against the end of the stream
// before using it, bounds the objects it makes, and keeps a tensor as a view of its storage: a
// view that repeats elements (stride 0) is never materialised here. Ours, not LibTorch's
// torch::pickle_load: that one takes what a file's pickle asks for (classes rebuilt by the
// TorchScript importer, storages of any declared size), where a file must be only data.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dptrain::serialize {

// A malformed or unsupported stream; the message says what and where (byte offset).
class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
  bool ordered = false;                                // kDict: written as an OrderedDict
  torch::Tensor tensor;                                // kTensor
  // Set once a container is inside another; from then on it may not change, so that `depth`
  // stays true and no container can come to hold itself.
  bool nested = false;
  int depth = 0;  // 0 for a scalar; a container: 1 + its deepest item's depth
};

// Containers nest at most this deep (a deeper one is refused: freeing it would recurse as deep).
constexpr int kMaxDepth = 100;
// A stream makes at most this many objects and holds at most this many on its stack (about 40 MB):
// a state_dict of a few hundred tensors needs some thousands.
constexpr int64_t kMaxObjects = int64_t{1} << 18;

// Building values.
ValuePtr none();
ValuePtr boolean(bool b);
ValuePtr integer(int64_t i);
ValuePtr real(double d);
ValuePtr text(std::string s);
ValuePtr tensor(torch::Tensor t);
ValuePtr list(std::vector<ValuePtr> items);
ValuePtr tuple(std::vector<ValuePtr> items);
ValuePtr dict(std::vector<std::pair<ValuePtr, ValuePtr>> entries, bool ordered = false);

// Reading them: a PickleError naming `what` when `v` is not of that kind.
int64_t as_int(const Value& v, std::string_view what);
double as_real(const Value& v, std::string_view what);  // an int or a float
const std::string& as_text(const Value& v, std::string_view what);
const torch::Tensor& as_tensor(const Value& v, std::string_view what);
const Value& as(Value::Kind kind, const Value& v, std::string_view what);
// The entry of a dict under the string `key`, or nullptr.
const Value* find(const Value& dict, std::string_view key);
// The same, a PickleError naming `what` when it is missing.
const Value& at(const Value& dict, std::string_view key, std::string_view what);

// A pickle stream of weights is some kilobytes (a checkpoint's, with its JSON record, some more);
// a bigger one is refused before it is read.
constexpr uint64_t kMaxPickleBytes = uint64_t{16} << 20;
// A dict's string key is a name (a parameter's, a record field's): at most this long.
constexpr size_t kMaxKeyBytes = 1024;
// A tensor has at most this many dimensions (PyTorch's own kernels take no more than 25).
constexpr int64_t kMaxTensorDims = 64;

// What one file may make the reader build, beyond the bounds above. A caller that knows the model
// the file must fit sets them from it (model::decode_limits): then a small file cannot claim more
// tensors, dimensions or storage bytes than the model's state, and a checkpoint's copies of it,
// can need, however its stream repeats memoised objects.
struct DecodeLimits {
  int64_t objects = kMaxObjects;               // objects made (memo re-pushes count)
  int64_t tensors = int64_t{1} << 16;          // views rebuilt
  int64_t dimensions = int64_t{1} << 18;       // their dimensions, summed
  uint64_t storage_bytes = uint64_t{4} << 30;  // storages' bytes, summed, before any is read
  // false: no storage is read at all, each stays a placeholder without bytes (a meta tensor), for
  // a caller that reads only a checkpoint's record.
  bool read_storages = true;
};

// A storage's bytes as a 1-D CPU tensor of `numel` elements of `dtype`, found by the record key
// the stream names ("0", "1", ...).
using StorageLoader =
    std::function<torch::Tensor(const std::string& key, at::ScalarType dtype, int64_t numel)>;

// The object the stream builds. Each storage is loaded once, however many views name it; views
// and their dimensions are counted against `limits` (the storages' bytes are the loader's to
// count).
ValuePtr read_pickle(std::string_view bytes, const StorageLoader& load_storage,
                     const DecodeLimits& limits = {});

// The stream Python's pickler writes at protocol 2 for `root`. Every tensor becomes a view of a
// storage of its own: `add_storage` receives it (contiguous, on the CPU) and returns its key.
// PyTorch 1.13's `weights_only` reader refuses floats (BINFLOAT), so dptrain's files hold none.
using StorageSaver = std::function<std::string(const torch::Tensor& contiguous)>;
std::string write_pickle(const Value& root, const StorageSaver& add_storage);

// "torch.FloatStorage" -> kFloat, ...; throws PickleError for any other name.
at::ScalarType storage_dtype(const std::string& global);

}  // namespace dptrain::serialize
