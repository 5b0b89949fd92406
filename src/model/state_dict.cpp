#include "model/state_dict.h"

#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "core/terminal.h"
#include "serialize/torch_file.h"
#include "serialize/zip_reader.h"

namespace dptrain::model {
namespace {

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream s;
  s << shape;
  return s.str();
}

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::string encode_state_dict(const StateDict& dict, const std::string& experiment) {
  std::vector<std::pair<serialize::ValuePtr, serialize::ValuePtr>> entries;
  for (const auto& [name, value] : dict) {
    entries.emplace_back(serialize::text(name), serialize::tensor(value));
  }
  std::vector<serialize::RawRecord> raw;
  if (!experiment.empty()) {
    const torch::Tensor bytes =
        torch::from_blob(const_cast<char*>(experiment.data()),
                         {static_cast<int64_t>(experiment.size())}, torch::kUInt8);
    raw.push_back({kExperimentRecord, bytes});
  }
  return serialize::encode_torch_file(*serialize::dict(std::move(entries), /*ordered=*/true), raw);
}

StateDict state_dict_of(const serialize::Value& root) {
  if (root.kind != serialize::Value::Kind::kDict) throw std::runtime_error("it holds no dict");
  StateDict dict;
  for (const auto& [key, value] : root.entries) {
    if (key->kind != serialize::Value::Kind::kString ||
        value->kind != serialize::Value::Kind::kTensor) {
      throw std::runtime_error("its dict holds more than name -> tensor");
    }
    dict.emplace_back(key->text, value->tensor);
  }
  return dict;
}

StateDict decode_state_dict(const std::string& bytes) {
  return state_dict_of(*serialize::decode_torch_file(bytes));
}

void save_state_dict(const std::filesystem::path& path, const StateDict& dict,
                     const std::string& experiment) {
  core::write_file_atomic(path, encode_state_dict(dict, experiment));
}

std::optional<std::string> state_dict_experiment(const std::filesystem::path& path) {
  constexpr uint64_t kMaxExperimentBytes = uint64_t{16} << 20;  // as dptrain's text files
  std::optional<serialize::ZipReader> archive;
  std::unique_ptr<core::ReadOnlyFile> file;
  try {
    file = std::make_unique<core::ReadOnlyFile>(path);
    archive.emplace(serialize::file_source(*file));
  } catch (const std::exception&) {
    return std::nullopt;  // no model file: reading its weights says what is wrong
  }
  if (!archive->has(kExperimentRecord)) return std::nullopt;
  // There, it is the model's: a damaged one must not leave the model to the defaults' classes.
  const auto damaged = [&](const std::string& what) {
    return core::Error(core::ErrorCode::kIo,
                       path.string() + ": its record " + kExperimentRecord + " " + what,
                       "give the run's config.json with --config, or the model file as its run "
                       "wrote it");
  };
  if (archive->size_of(kExperimentRecord) > kMaxExperimentBytes) {
    throw damaged("holds " + std::to_string(archive->size_of(kExperimentRecord)) +
                  " bytes, more than any experiment");
  }
  try {
    return archive->record(kExperimentRecord);
  } catch (const std::exception& e) {
    throw damaged(std::string("is damaged: ") + e.what());
  }
}

std::vector<StateSpec> state_specs(const torch::nn::Module& model) {
  // PyTorch's state_dict() order: module by module, each one's parameters then its buffers.
  std::map<std::string, size_t> position;
  for (const auto& module : model.named_modules()) {
    const std::string prefix = module.key().empty() ? "" : module.key() + ".";
    for (const auto& p : module.value()->named_parameters(/*recurse=*/false)) {
      position.emplace(prefix + p.key(), position.size());
    }
    for (const auto& b : module.value()->named_buffers(/*recurse=*/false)) {
      position.emplace(prefix + b.key(), position.size());
    }
  }
  std::vector<StateSpec> specs;
  for (const auto& p : model.named_parameters()) {
    specs.push_back({p.key(), p.value().sizes().vec(), position.at(p.key())});
  }
  for (const auto& b : model.named_buffers()) {
    specs.push_back({b.key(), b.value().sizes().vec(), position.at(b.key())});
  }
  return specs;
}

serialize::DecodeLimits decode_limits(const std::vector<StateSpec>& specs) {
  constexpr int64_t kCopies = 4;
  serialize::DecodeLimits limits;
  limits.tensors = kCopies * static_cast<int64_t>(specs.size()) + 16;
  // Each tensor takes some ten objects to rebuild and name, a module's metadata some more.
  limits.objects = 64 * limits.tensors + 4096;
  limits.dimensions = 64;
  limits.storage_bytes = uint64_t{1} << 20;
  for (const auto& spec : specs) {
    const int64_t numel = std::accumulate(spec.shape.begin(), spec.shape.end(), int64_t{1},
                                          std::multiplies<int64_t>());
    limits.dimensions += kCopies * static_cast<int64_t>(spec.shape.size());
    limits.storage_bytes += static_cast<uint64_t>(kCopies * numel * 8);
  }
  return limits;
}

serialize::DecodeLimits decode_limits(const std::vector<torch::Tensor>& state) {
  std::vector<StateSpec> specs;
  for (const auto& t : state) specs.push_back({"", t.sizes().vec(), 0});
  return decode_limits(specs);
}

std::vector<torch::Tensor> match_state(const StateDict& dict, const std::vector<StateSpec>& specs,
                                       const std::string& source) {
  std::map<std::string, torch::Tensor> given(dict.begin(), dict.end());
  std::vector<std::string> missing, misshaped;
  std::vector<torch::Tensor> ordered;
  std::set<std::string> wanted;
  for (const auto& spec : specs) {
    wanted.insert(spec.name);
    const auto it = given.find(spec.name);
    if (it == given.end() && ends_with(spec.name, ".num_batches_tracked")) {
      // State dicts from before PyTorch 0.4.1 lack BatchNorm's step counter; PyTorch starts it
      // at 0 then, as here.
      ordered.push_back(torch::zeros({}, torch::TensorOptions(torch::kLong)));
    } else if (it == given.end()) {
      missing.push_back(core::printable(spec.name) + " " + shape_text(spec.shape));
    } else if (it->second.sizes().vec() != spec.shape) {
      misshaped.push_back(core::printable(spec.name) + ": " + shape_text(it->second.sizes()) +
                          " in the file, " + shape_text(spec.shape) + " in the model");
    } else {
      ordered.push_back(it->second);
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, value] : dict) {
    if (!wanted.count(name))
      unexpected.push_back(core::printable(name) + " " + shape_text(value.sizes()));
  }
  if (missing.empty() && misshaped.empty() && unexpected.empty()) return ordered;
  std::string what = source + ": its parameters do not fit the model:";
  if (!missing.empty()) what += " missing " + joined(missing) + ";";
  if (!unexpected.empty()) what += " unexpected " + joined(unexpected) + ";";
  if (!misshaped.empty()) what += " mis-shaped " + joined(misshaped) + ";";
  what.pop_back();
  throw core::Error(core::ErrorCode::kConfig, what,
                    "use the experiment's model (model.name) that the file was trained with");
}

}  // namespace dptrain::model
