#include "model/state_dict.h"

#include <caffe2/serialize/inline_container.h>

#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "model/archive_check.h"
#include "model/pickle.h"

namespace dptrain::model {
namespace {

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream s;
  s << shape;
  return s.str();
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::string encode_state_dict(const StateDict& dict) {
  std::vector<std::pair<std::string, torch::Tensor>> host;
  for (const auto& [name, value] : dict) {
    host.emplace_back(name, value.detach().to(torch::kCPU).contiguous());
  }
  std::string bytes;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  const std::string pickled = pickle::write_tensor_dict(host);
  writer.writeRecord("data.pkl", pickled.data(), pickled.size());
  for (size_t i = 0; i < host.size(); ++i) {
    const torch::Tensor& t = host[i].second;
    writer.writeRecord("data/" + std::to_string(i), t.data_ptr(), t.nbytes());
  }
  writer.writeEndOfFile();
  return bytes;
}

StateDict decode_state_dict(const std::string& bytes) {
  check_archive(bytes);
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  if (!reader.hasRecord("data.pkl")) throw std::runtime_error("no data.pkl in the archive");
  const auto [pickled, pickled_size] = reader.getRecord("data.pkl");
  const std::string stream(static_cast<const char*>(pickled.get()), pickled_size);
  const auto load_storage = [&](const std::string& key, at::ScalarType dtype, int64_t numel) {
    const std::string name = "data/" + key;
    if (!reader.hasRecord(name)) throw std::runtime_error("no record " + name + " in the archive");
    auto [data, size] = reader.getRecord(name);
    const size_t expected = static_cast<size_t>(numel) * c10::elementSize(dtype);
    if (size != expected) {
      throw std::runtime_error("record " + name + " holds " + std::to_string(size) +
                               " bytes where " + std::to_string(numel) + " elements of " +
                               c10::toString(dtype) + " need " + std::to_string(expected));
    }
    return torch::from_blob(data.get(), {numel}, torch::TensorOptions().dtype(dtype)).clone();
  };
  const pickle::ValuePtr root = pickle::read(stream, load_storage);
  if (root->kind != pickle::Value::Kind::kDict) throw std::runtime_error("it holds no dict");
  StateDict dict;
  for (const auto& [key, value] : root->entries) {
    if (key->kind != pickle::Value::Kind::kString || value->kind != pickle::Value::Kind::kTensor) {
      throw std::runtime_error("its dict holds more than name -> tensor");
    }
    dict.emplace_back(key->text, value->tensor);
  }
  return dict;
}

void save_state_dict(const std::filesystem::path& path, const StateDict& dict) {
  core::write_file_atomic(path, encode_state_dict(dict));
}

std::vector<ParameterSpec> parameter_specs(const torch::nn::Module& model) {
  std::vector<ParameterSpec> specs;
  for (const auto& p : model.named_parameters())
    specs.push_back({p.key(), p.value().sizes().vec()});
  return specs;
}

std::vector<torch::Tensor> match_parameters(const StateDict& dict,
                                            const std::vector<ParameterSpec>& specs,
                                            const std::string& source) {
  std::map<std::string, torch::Tensor> given(dict.begin(), dict.end());
  std::vector<std::string> missing, misshaped;
  std::vector<torch::Tensor> ordered;
  std::set<std::string> wanted;
  for (const auto& spec : specs) {
    wanted.insert(spec.name);
    const auto it = given.find(spec.name);
    if (it == given.end()) {
      missing.push_back(spec.name + " " + shape_text(spec.shape));
    } else if (it->second.sizes().vec() != spec.shape) {
      misshaped.push_back(spec.name + ": " + shape_text(it->second.sizes()) + " in the file, " +
                          shape_text(spec.shape) + " in the model");
    } else {
      ordered.push_back(it->second);
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, value] : dict) {
    if (!wanted.count(name)) unexpected.push_back(name + " " + shape_text(value.sizes()));
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
