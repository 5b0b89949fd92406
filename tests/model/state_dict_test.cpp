#include "support/catch.h"

#include <caffe2/serialize/inline_container.h>

#include <sstream>
#include <string_view>

#include "core/error.h"
#include "core/fs.h"
#include "model/registry.h"
#include "model/state_dict.h"
#include "serialize/pickle.h"
#include "serialize/zip_reader.h"
#include "support/torch_archives.h"

using namespace dptrain;
using testing::binunicode;
using testing::pickle_stream;
namespace pickle = dptrain::serialize;

namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(DPTRAIN_SOURCE_DIR) / "tests/model/data";

pickle::ValuePtr read_plain(const std::string& bytes) {
  return pickle::read_pickle(bytes,
                             [](const std::string&, at::ScalarType, int64_t) -> torch::Tensor {
                               throw pickle::PickleError("no storages here");
                             });
}

}  // namespace

TEST_CASE("a state_dict survives encoding and decoding, names, order, dtypes and values",
          "[model]") {
  const model::StateDict dict = {
      {"0.weight", torch::randn({20, 1, 3, 3})},
      {"0.bias", torch::zeros({20})},
      {"steps", torch::tensor({int64_t{7}, int64_t{-3}, int64_t{1} << 40})},
      {"view", torch::arange(12, torch::kFloat64).reshape({3, 4}).t()},  // not contiguous
      {"scalar", torch::tensor(2.5)},
      {"empty", torch::zeros({0, 3})},
  };
  const model::StateDict back = model::decode_state_dict(model::encode_state_dict(dict));
  REQUIRE(back.size() == dict.size());
  for (size_t i = 0; i < dict.size(); ++i) {
    CHECK(back[i].first == dict[i].first);
    CHECK(back[i].second.scalar_type() == dict[i].second.scalar_type());
    CHECK(back[i].second.sizes() == dict[i].second.sizes());
    CHECK(torch::equal(back[i].second, dict[i].second));
  }
}

TEST_CASE("an OrderedDict that Python's torch.save wrote is read with its values", "[model]") {
  // tests/model/data/make_python_state_dict.py made the files, with Debian's PyTorch 1.13 and
  // trixie's 2.6 (whose archive adds byteorder and .data/serialization_id records).
  for (const char* file : {"python_state_dict.pt", "python26_state_dict.pt"}) {
    INFO(file);
    const model::StateDict dict = model::decode_state_dict(core::read_text_file(kFixtures / file));
    REQUIRE(dict.size() == 4);
    CHECK(dict[0].first == "weight");
    CHECK(torch::equal(dict[0].second, torch::arange(6, torch::kFloat32).reshape({2, 3}) / 10));
    CHECK(dict[1].first == "bias");
    CHECK(torch::equal(dict[1].second, torch::tensor({-1.0f, 2.0f})));
    CHECK(dict[2].first == "steps");
    CHECK(torch::equal(dict[2].second, torch::tensor({int64_t{7}, int64_t{-3}})));
    CHECK(dict[3].first == "transposed");
    CHECK(torch::equal(dict[3].second, torch::arange(6, torch::kFloat64).reshape({2, 3}).t()));
  }
}

TEST_CASE("LeNet's parameters carry the names of d2l's nn.Sequential", "[model]") {
  config::ModelConfig config;
  config.name = "lenet";
  const auto model = model::make_model(config);
  std::vector<std::string> names;
  for (const auto& spec : model::state_specs(*model.ptr())) names.push_back(spec.name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias", "7.weight",
                                          "7.bias", "9.weight", "9.bias"});
}

TEST_CASE("parameters that do not fit the model are listed, each with its shapes", "[model]") {
  const std::vector<model::StateSpec> specs = {
      {"0.weight", {2, 3}}, {"0.bias", {2}}, {"1.weight", {4, 2}}};
  const model::StateDict dict = {{"0.weight", torch::zeros({3, 2})},
                                 {"0.bias", torch::zeros({2})},
                                 {"extra", torch::zeros({5})}};
  try {
    model::match_state(dict, specs, "py.pt");
    FAIL("no error");
  } catch (const core::Error& e) {
    CHECK(e.code() == core::ErrorCode::kConfig);
    CHECK(std::string(e.what()) ==
          "py.pt: its parameters do not fit the model: missing 1.weight [4, 2]; unexpected "
          "extra [5]; mis-shaped 0.weight: [3, 2] in the file, [2, 3] in the model");
  }
  const auto ordered = model::match_state({{"0.bias", torch::ones({2})},
                                           {"1.weight", torch::ones({4, 2})},
                                           {"0.weight", torch::ones({2, 3})}},
                                          specs, "ok.pt");
  REQUIRE(ordered.size() == 3);
  CHECK(ordered[0].sizes() == torch::IntArrayRef({2, 3}));
  CHECK(ordered[2].sizes() == torch::IntArrayRef({4, 2}));
}

TEST_CASE("a pickle that calls anything but a tensor rebuild is refused", "[model]") {
  // os.system("true"), as a malicious file would carry it.
  const std::string evil = pickle_stream("cos\nsystem\n" + binunicode("true") + "\x85R");
  CHECK_THROWS_WITH(read_plain(evil), ContainsSubstring("the global os.system, which a PyTorch "
                                                        "file of weights does not name"));
}

TEST_CASE("pickle operands that run past the stream are refused before anything is read",
          "[model]") {
  // A string that says it is 4 GB long: LibTorch's unpickler would reserve that much first.
  const std::string huge = pickle_stream(std::string("X\xfe\xff\xff\xff", 5) + "abc");
  CHECK_THROWS_WITH(read_plain(huge), ContainsSubstring("ends inside an operand"));
  CHECK_THROWS_WITH(read_plain(std::string("\x80\x02N", 3)), ContainsSubstring("no STOP"));
  CHECK_THROWS_WITH(read_plain(pickle_stream("\xff")),
                    ContainsSubstring("unknown pickle opcode 0xff"));
  CHECK(read_plain(pickle_stream(binunicode("fine") + std::string("q\0", 2)))->text == "fine");
}

TEST_CASE("pickle containers nested without end, or holding themselves, are refused", "[model]") {
  // ()  then 200 TUPLE1: tuples 200 deep.
  std::string deep = ")" + std::string(200, '\x85');
  CHECK_THROWS_WITH(read_plain(pickle_stream(deep)), ContainsSubstring("nested deeper than 100"));
  // An empty list, memoised, appended to itself.
  CHECK_THROWS_WITH(read_plain(pickle_stream(std::string("]q\0h\0a", 6))),
                    ContainsSubstring("holds itself"));
  CHECK(read_plain(pickle_stream(std::string(")", 1) + std::string(100, '\x85')))->depth == 100);
}

TEST_CASE("damaged state_dict files are errors that say what is wrong", "[model]") {
  const std::string good = model::encode_state_dict({{"w", torch::ones({4})}});
  CHECK_THROWS(model::decode_state_dict(good.substr(0, good.size() / 2)));
  CHECK_THROWS(model::decode_state_dict("not a zip file at all"));
  // A storage record shorter than the tensor it holds.
  std::string records;
  {
    const serialize::ZipReader reader(good);
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
      records.append(static_cast<const char*>(data), size);
      return size;
    });
    const std::string pkl = reader.record("data.pkl");
    writer.writeRecord("data.pkl", pkl.data(), pkl.size());
    const float three[3] = {1, 1, 1};
    writer.writeRecord("data/0", three, sizeof three);
    writer.writeEndOfFile();
  }
  CHECK_THROWS_WITH(
      model::decode_state_dict(records),
      ContainsSubstring("record data/0 holds 12 bytes where 4 elements of Float need 16"));
}
