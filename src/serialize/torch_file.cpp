#include "serialize/torch_file.h"

#include <caffe2/serialize/inline_container.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/terminal.h"

namespace dptrain::serialize {

std::string encode_torch_file(const Value& root, const std::vector<RawRecord>& raw) {
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
  for (const auto& record : raw) {
    writer.writeRecord(record.name, record.contiguous.data_ptr(), record.contiguous.nbytes());
  }
  writer.writeEndOfFile();
  return bytes;
}

namespace {

// Counts the storages' bytes against the limit as each is named, before it is read.
class StorageBudget {
 public:
  explicit StorageBudget(uint64_t limit) : left_(limit), limit_(limit) {}

  void take(const std::string& name, uint64_t bytes) {
    if (bytes > left_) {
      throw PickleError("storage " + name + " of " + std::to_string(bytes) +
                        " bytes makes the storages more than the " + std::to_string(limit_) +
                        " bytes the model's state can need");
    }
    left_ -= bytes;
  }

 private:
  uint64_t left_;
  uint64_t limit_;
};

}  // namespace

ValuePtr decode_torch_file(const ByteSource& source, const DecodeLimits& limits) {
  const ZipReader archive(source);
  // torch.jit.save's archives (and LibTorch's torch::serialize ones) carry TorchScript code and
  // constants; loading them means compiling and running that code.
  for (const std::string& name : archive.names()) {
    if (name == "constants.pkl" || name.rfind("code/", 0) == 0) {
      throw CodeArchiveError("a TorchScript archive (it holds " + core::printable(name) +
                             "), which carries code that loading it would run");
    }
  }
  const uint64_t pickle_size = archive.size_of("data.pkl");
  if (pickle_size > kMaxPickleBytes) {
    throw PickleError("data.pkl of " + std::to_string(pickle_size) + " bytes, more than the " +
                      std::to_string(kMaxPickleBytes) + " a file of weights needs");
  }
  const std::string pickled = archive.record("data.pkl");
  StorageBudget budget(limits.storage_bytes);
  const auto load_storage = [&](const std::string& key, at::ScalarType dtype, int64_t numel) {
    const std::string name = "data/" + key;
    const uint64_t size = archive.size_of(name);
    const auto element = static_cast<int64_t>(c10::elementSize(dtype));
    int64_t expected = 0;
    const bool overflow = __builtin_mul_overflow(numel, element, &expected);
    if (overflow || static_cast<uint64_t>(expected) != size) {
      throw PickleError("record " + name + " holds " + std::to_string(size) + " bytes where " +
                        std::to_string(numel) + " elements of " + c10::toString(dtype) + " need " +
                        (overflow ? std::string("more than 2^63") : std::to_string(expected)));
    }
    const auto options = torch::TensorOptions().dtype(dtype);
    if (!limits.read_storages) return torch::empty({numel}, options.device(torch::kMeta));
    budget.take(name, size);
    torch::Tensor storage = torch::empty({numel}, options);
    archive.read_record(name, static_cast<char*>(storage.data_ptr()));
    return storage;
  };
  return read_pickle(pickled, load_storage, limits);
}

uint64_t largest_file_bytes(const DecodeLimits& limits) {
  // PyTorch pads each record to 64 bytes in its local header's extra field; its names are short.
  constexpr uint64_t kRecordOverhead = 4096;
  return limits.storage_bytes + kMaxPickleBytes + kMaxDirectoryBytes +
         static_cast<uint64_t>(limits.tensors + 4) * kRecordOverhead;
}

ValuePtr decode_torch_file(std::string_view bytes, const DecodeLimits& limits) {
  return decode_torch_file(memory_source(bytes), limits);
}

}  // namespace dptrain::serialize
