// Small files that claim much: a pickle that names one memoised object again and again, views of
// a thousand dimensions, a storage that claims gigabytes over a hole in the file, and a file that
// shrinks while it is read. Each is refused, or read, within 100 MB (support/memory.h) and without
// reading what it claims, whatever the file says.
#include <unistd.h>

#include "core/error.h"
#include "core/fs.h"
#include "model/lenet.h"
#include "model/state_dict.h"
#include "serialize/little_endian.h"
#include "serialize/pickle.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/memory.h"
#include "support/torch_archives.h"
#include "train/model_file.h"

using namespace dptrain;
using testing::binunicode;
using testing::pickle_stream;
using testing::run_within_memory;
using testing::TempDir;

namespace {

constexpr long kAmplificationCeilingMb = 100;

std::string binint(int64_t v) {
  std::string out = "J";
  serialize::append_le(out, static_cast<uint64_t>(v), 4);
  return out;
}

// ('storage', torch.FloatStorage, key, 'cpu', numel), as a persistent id.
std::string float_storage(const std::string& key, int64_t numel) {
  return "(" + binunicode("storage") + "ctorch\nFloatStorage\n" + binunicode(key) +
         binunicode("cpu") + binint(numel) + "tQ";
}

// _rebuild_tensor_v2 of `storage` at offset 0 with this size and stride (each a tuple's body).
std::string rebuild(const std::string& storage, const std::string& size,
                    const std::string& stride) {
  return "ctorch._utils\n_rebuild_tensor_v2\n(" + storage + binint(0) + "(" + size + "t(" + stride +
         "ttR";
}

serialize::ValuePtr read_with_storage(const std::string& pickle,
                                      const serialize::DecodeLimits& limits = {}) {
  return serialize::read_pickle(
      pickle,
      [](const std::string&, at::ScalarType dtype, int64_t numel) {
        return torch::zeros({numel}, torch::TensorOptions().dtype(dtype));
      },
      limits);
}

const std::vector<model::StateSpec>& lenet_specs() {
  static const std::vector<model::StateSpec> specs = model::state_specs(*model::LeNet());
  return specs;
}

}  // namespace

TEST_CASE("one memoised key named by many dicts costs no copy of it each time",
          "[serialize][security]") {
  // A list holding the key, then each dict: EMPTY_DICT, BINGET 0 (the key), NONE, SETITEM,
  // APPEND. The file: a key of 1 MB, which a reader that kept a copy of each dict's keys
  // held 50,000 times; no name is that long.
  const auto dicts = [](size_t key_bytes, int count) {
    std::string body = "]" + binunicode(std::string(key_bytes, 'k')) + std::string("q\0", 2) + "a";
    for (int i = 0; i < count; ++i) body += std::string("}h\0Nsa", 6);
    return pickle_stream(body);
  };
  CHECK_THAT(
      run_within_memory([&] { read_with_storage(dicts(1 << 20, 50000)); }, kAmplificationCeilingMb),
      ContainsSubstring("threw: a dict key of 1048576 bytes, longer than the 1024 any name "
                        "in a file of weights needs"));
  // The longest key allowed, in 80,000 dicts: 80 MB of copies, none made.
  CHECK(run_within_memory([&] { read_with_storage(dicts(1024, 80000)); },
                          kAmplificationCeilingMb) == "returned");
}

TEST_CASE("a memoised object pushed again and again counts as an object made each time",
          "[serialize][security]") {
  // A list holding None, then BINGET 0 and APPEND 300,000 times: a list that grows by two bytes of
  // stream per item, never holding more than two objects on the stack.
  std::string body = std::string("]N") + std::string("q\0", 2) + "a";
  for (int i = 0; i < 300000; ++i) body += std::string("h\0a", 3);
  CHECK_THAT(
      run_within_memory([&] { read_with_storage(pickle_stream(body)); }, kAmplificationCeilingMb),
      ContainsSubstring("threw: more than 262144 objects"));
}

TEST_CASE("a tensor's size of more than 64 dimensions is refused before it is read",
          "[serialize][security]") {
  std::string ones;
  for (int i = 0; i < 100000; ++i) ones += "K\x01";
  CHECK_THROWS_WITH(read_with_storage(pickle_stream(rebuild(float_storage("0", 4), ones, ones))),
                    ContainsSubstring("a tensor's size of 100000 dimensions, more than the 64 a "
                                      "tensor may have"));
  std::string sixty_four;
  for (int i = 0; i < 64; ++i) sixty_four += "K\x01";
  CHECK(read_with_storage(pickle_stream(rebuild(float_storage("0", 4), sixty_four, sixty_four)))
            ->tensor.dim() == 64);
}

TEST_CASE("views of one memoised size named again and again are counted against the model's state",
          "[serialize][security]") {
  // A memoised size of `dims` dimensions, then 20,000 views of one storage through it, in a list:
  // with 64 dimensions each view holds its sizes and strides, some 2 KB, 40 MB in all from 300 KB
  // of stream.
  const auto views = [](int dims) {
    std::string size;
    for (int i = 0; i < dims; ++i) size += "K\x01";
    std::string body = "]" + float_storage("0", 4) + std::string("q\x01", 2) + "a(" + size + "t" +
                       std::string("q\x02", 2) + "a";
    const std::string view = "ctorch._utils\n_rebuild_tensor_v2\n(" + std::string("h\x01", 2) +
                             binint(0) + std::string("h\x02h\x02", 4) + "tR";
    for (int i = 0; i < 20000; ++i) body += view + "a";
    return pickle_stream(body);
  };
  const serialize::DecodeLimits lenet = model::decode_limits(lenet_specs());
  CHECK(lenet.tensors == 4 * static_cast<int64_t>(lenet_specs().size()) + 16);
  CHECK_THROWS_WITH(read_with_storage(views(1), lenet),
                    ContainsSubstring("more than " + std::to_string(lenet.tensors) +
                                      " tensors, more than the model's state can need"));
  CHECK_THROWS_WITH(read_with_storage(views(64), lenet),
                    ContainsSubstring("tensors of more than " + std::to_string(lenet.dimensions) +
                                      " dimensions in all"));
  // A model of many tensors may have as many views; their dimensions are counted all the same.
  serialize::DecodeLimits wide;
  wide.dimensions = 64 * 1000;
  CHECK_THROWS_WITH(read_with_storage(views(64), wide),
                    ContainsSubstring("tensors of more than 64000 dimensions in all"));
  CHECK(read_with_storage(views(1), wide)->items.size() == 20002);
}

TEST_CASE(
    "a model file whose storage claims 1.5 GB over a hole in the file is refused before any of it "
    "is read, within 100 MB",
    "[serialize][security]") {
  TempDir dir;
  const int64_t numel = int64_t{384} << 20;  // floats: 1.5 GiB
  const std::string pickle =
      pickle_stream("}(" + binunicode("0.weight") +
                    rebuild(float_storage("0", numel), binint(numel), "K\x01") + "u");
  const auto file = dir / "sparse.pt";
  testing::write_stored_zip(
      file, {{"data.pkl", pickle, 0}, {"data/0", "", static_cast<uint64_t>(numel) * 4}});
  CHECK(std::filesystem::file_size(file) > (uint64_t{3} << 29));
  const std::string outcome = testing::run_within_resident_memory(
      [&] { train::read_model_file(file, lenet_specs()); }, kAmplificationCeilingMb);
  CHECK_THAT(outcome, ContainsSubstring("sparse.pt: neither a state_dict nor a dptrain checkpoint: "
                                        "storage data/0 of 1610612736 bytes makes the storages "
                                        "more than the"));
  CHECK_THAT(outcome, ContainsSubstring("bytes the model's state can need"));
  // A data.pkl that claims 1 GB is refused by its size likewise, never checksummed.
  testing::write_stored_zip(file, {{"data.pkl", "", uint64_t{1} << 30}});
  CHECK_THAT(testing::run_within_resident_memory(
                 [&] { train::read_model_file(file, lenet_specs()); }, kAmplificationCeilingMb),
             ContainsSubstring("data.pkl of 1073741824 bytes, more than the 16777216 a file of "
                               "weights needs"));
}

TEST_CASE("a model file that shrinks while it is read is an error naming it, not a SIGBUS",
          "[serialize][security]") {
  TempDir dir;
  const auto file = dir / "model.pt";
  torch::manual_seed(0);
  const auto lenet = model::LeNet();
  model::StateDict state;
  for (const auto& p : lenet->named_parameters()) state.emplace_back(p.key(), p.value());
  model::save_state_dict(file, state);
  REQUIRE(train::read_model_file(file, lenet_specs()).size() == lenet_specs().size());
  const auto size = std::filesystem::file_size(file);
  const std::string outcome = run_within_memory(
      [&] {
        const auto opened = std::make_shared<const core::ReadOnlyFile>(file);
        std::filesystem::resize_file(file, size / 2);  // cut while open, as another process might
        train::read_model_file(file, opened, lenet_specs());
      },
      kAmplificationCeilingMb);
  CHECK_THAT(outcome, ContainsSubstring("threw: " + file.string() + ": the file ends at byte "));
  CHECK_THAT(outcome,
             ContainsSubstring("though it held " + std::to_string(size) + " bytes when opened"));
}
