#include "serialize/torch_file.h"

#include <caffe2/serialize/inline_container.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "serialize/zip_reader.h"

namespace dptrain::serialize {

std::string encode_torch_file(const Value& root) {
  std::vector<torch::Tensor> storages;
  const std::string pickled = write_pickle(root, [&](const torch::Tensor& contiguous) {
    storages.push_back(contiguous);
    return std::to_string(storages.size() - 1);
  });
  std::string bytes;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  writer.writeRecord("data.pkl", pickled.data(), pickled.size());
  for (size_t i = 0; i < storages.size(); ++i) {
    writer.writeRecord("data/" + std::to_string(i), storages[i].data_ptr(), storages[i].nbytes());
  }
  writer.writeEndOfFile();
  return bytes;
}

ValuePtr decode_torch_file(std::string_view bytes, std::shared_ptr<const void> owner) {
  const ZipReader archive(bytes);
  // torch.jit.save's archives (and LibTorch's torch::serialize ones) carry TorchScript code and
  // constants; loading them means compiling and running that code.
  for (const std::string& name : archive.names()) {
    if (name == "constants.pkl" || name.rfind("code/", 0) == 0) {
      throw CodeArchiveError("a TorchScript archive (it holds " + name +
                             "), which carries code that loading it would run");
    }
  }
  const std::string_view pickled = archive.record("data.pkl");
  const auto load_storage = [&](const std::string& key, at::ScalarType dtype, int64_t numel) {
    const std::string name = "data/" + key;
    const std::string_view data = archive.record(name);
    const auto element = static_cast<int64_t>(c10::elementSize(dtype));
    int64_t expected = 0;
    const bool overflow = __builtin_mul_overflow(numel, element, &expected);
    if (overflow || static_cast<uint64_t>(expected) != data.size()) {
      throw PickleError("record " + name + " holds " + std::to_string(data.size()) +
                        " bytes where " + std::to_string(numel) + " elements of " +
                        c10::toString(dtype) + " need " +
                        (overflow ? std::string("more than 2^63") : std::to_string(expected)));
    }
    const auto options = torch::TensorOptions().dtype(dtype);
    const auto address = reinterpret_cast<uintptr_t>(data.data());
    if (owner && !data.empty() && address % static_cast<uintptr_t>(element) == 0) {
      // Never written: every reader copies what it keeps (the mapping is read-only).
      return torch::from_blob(
          const_cast<char*>(data.data()), {numel}, [owner](void*) { (void)owner; }, options);
    }
    torch::Tensor storage = torch::empty({numel}, options);
    if (!data.empty()) std::memcpy(storage.data_ptr(), data.data(), data.size());
    return storage;
  };
  return read_pickle(pickled, load_storage);
}

}  // namespace dptrain::serialize
