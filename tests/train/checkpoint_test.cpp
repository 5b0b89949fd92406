// Checkpoints in one process: names and their order, what a checkpoint restores, what it
// refuses, and that a crash while writing one leaves the previous one whole.
#include "run/checkpoints.h"
#include "train/checkpoint_io.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <limits>
#include <thread>

#include <nlohmann/json.hpp>
#include "support/catch.h"

#include "config/load.h"
#include "core/error.h"
#include "core/fs.h"
#include "model/registry.h"
#include "optim/param_state.h"
#include "parallel/single.h"
#include "serialize/torch_file.h"
#include "support/fixtures.h"
#include "support/torch_archives.h"

using namespace dptrain;
using testing::edit_data_pkl;
using testing::TempDir;

namespace {

config::Config lenet_config() {
  return config::resolve_config(std::nullopt, "test", {"optimizer.momentum=0.9"}, {"lenet"});
}

struct Trainee {
  parallel::SingleDevice backend;
  torch::optim::SGD sgd;
  explicit Trainee(int64_t seed)
      : backend((torch::manual_seed(static_cast<uint64_t>(seed)),
                 model::make_model(config::ModelConfig{})),
                torch::kCPU),
        sgd(backend.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)) {}

  void step(int64_t k) {
    torch::manual_seed(static_cast<uint64_t>(100 + k));
    const torch::Tensor x = torch::rand({8, 1, 28, 28});
    const torch::Tensor y = torch::randint(0, 10, {8}, torch::kInt64);
    sgd.zero_grad();
    torch::nn::functional::cross_entropy(backend.forward(x), y).backward();
    sgd.step();
  }
};

bool same_parameters(parallel::Backend& a, parallel::Backend& b) {
  const auto pa = a.parameters();
  const auto pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!torch::equal(pa[i], pb[i])) return false;
  }
  return true;
}

run::ResumePoint some_progress() {
  run::ResumePoint p;
  p.epoch = 2;
  p.batches_done = 5;
  p.partial.loss = 11.5;
  p.partial.correct = 31;
  p.partial.samples = 40;
  run::EpochMetrics first;
  first.epoch = 1;
  first.test_acc = 0.5;
  p.epochs = {first, first};
  p.epochs[1].epoch = 2;
  p.early_stopping = {2, 0.25, 1};
  return p;
}

// Copies of a trainee's parameters now, to show later that a refused checkpoint changed none.
std::vector<torch::Tensor> snapshot(Trainee& t) {
  std::vector<torch::Tensor> copies;
  for (const auto& p : t.backend.parameters()) copies.push_back(p.detach().clone());
  return copies;
}

bool unchanged(Trainee& t, const std::vector<torch::Tensor>& copies) {
  const auto now = t.backend.parameters();
  for (size_t i = 0; i < now.size(); ++i) {
    if (!torch::equal(now[i], copies[i])) return false;
  }
  return now.size() == copies.size();
}

// A checkpoint of a LeNet after one step (so that it has momentum buffers), written to
// dir/whole.pt and decoded, for the tests that make damaged copies of it.
serialize::ValuePtr whole_checkpoint(const TempDir& dir) {
  Trainee lenet(1);
  lenet.step(0);
  train::save_checkpoint(dir / "whole.pt", lenet_config(), some_progress(), lenet.backend,
                         lenet.sgd);
  return serialize::decode_torch_file(core::read_text_file(dir / "whole.pt"));
}

// The entry `key` of a decoded checkpoint, to be changed in place.
serialize::ValuePtr& entry_of(const serialize::ValuePtr& root, const std::string& key) {
  for (auto& [k, v] : root->entries) {
    if (k->text == key) return v;
  }
  FAIL("the checkpoint has no " << key);
  throw std::logic_error("unreachable");
}

// The message of the I/O error that reading the checkpoint `path` into `into` must give.
std::string refusal(const std::filesystem::path& path, Trainee& into) {
  try {
    train::load_checkpoint(path, lenet_config(), into.backend, into.sgd);
  } catch (const core::Error& e) {
    CHECK(e.code() == core::ErrorCode::kIo);
    return e.what();
  }
  FAIL("a damaged checkpoint was accepted");
  return {};
}

void touch(const std::filesystem::path& path) {
  core::write_file_atomic(path, "x");
}

}  // namespace

TEST_CASE("checkpoint names sort as training goes, the newest is resumed and old ones pruned",
          "[train][checkpoint]") {
  CHECK(run::checkpoint_name(3, 0) == "epoch-0003.pt");
  CHECK(run::checkpoint_name(3, 17) == "epoch-0003-batch-000017.pt");
  TempDir dir;
  for (const char* name : {"epoch-0002.pt", "epoch-0003.pt", "epoch-0003-batch-000017.pt",
                           "epoch-0001-batch-000090.pt", "best.pt", "epoch-0004.pt.tmp.123"}) {
    touch(dir / name);
  }
  CHECK(run::latest_checkpoint(dir.path()) == dir / "epoch-0003-batch-000017.pt");
  run::prune_checkpoints(dir.path(), 2);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"best.pt", "epoch-0003-batch-000017.pt", "epoch-0003.pt",
                                         "epoch-0004.pt.tmp.123"});
  CHECK_FALSE(run::latest_checkpoint(dir / "none").has_value());
  // A name whose number no run reaches is no checkpoint of ours: std::stoll threw on it.
  touch(dir / "epoch-99999999999999999999.pt");
  touch(dir / "epoch-0001-batch-99999999999999999999.pt");
  CHECK(run::latest_checkpoint(dir.path()) == dir / "epoch-0003-batch-000017.pt");
  CHECK_NOTHROW(run::prune_checkpoints(dir.path(), 1));
  CHECK(std::filesystem::exists(dir / "epoch-99999999999999999999.pt"));
}

TEST_CASE("a checkpoint restores parameters, optimizer state and progress", "[train][checkpoint]") {
  const config::Config config = lenet_config();
  TempDir dir;
  Trainee original(1);
  original.step(0);
  original.step(1);
  train::save_checkpoint(dir / "c.pt", config, some_progress(), original.backend, original.sgd);

  Trainee resumed(2);  // other initial weights, no momentum yet
  REQUIRE_FALSE(same_parameters(original.backend, resumed.backend));
  const run::ResumePoint p =
      train::load_checkpoint(dir / "c.pt", config, resumed.backend, resumed.sgd);
  CHECK(same_parameters(original.backend, resumed.backend));
  CHECK(p.epoch == 2);
  CHECK(p.batches_done == 5);
  CHECK(p.partial.loss == 11.5);
  CHECK(p.partial.correct == 31);
  CHECK(p.partial.samples == 40);
  REQUIRE(p.epochs.size() == 2);
  CHECK(p.epochs[1].epoch == 2);
  CHECK(p.epochs[1].test_acc == 0.5);
  CHECK(p.early_stopping.best_epoch == 2);
  CHECK(p.early_stopping.best == 0.25);
  CHECK(p.early_stopping.without_improvement == 1);
  // The momentum buffers came along: the next step is the same step.
  original.step(2);
  resumed.step(2);
  CHECK(same_parameters(original.backend, resumed.backend));
}

TEST_CASE("a checkpoint of another model or a file that is none is refused, naming it",
          "[train][checkpoint]") {
  TempDir dir;
  Trainee lenet(1);
  train::save_checkpoint(dir / "lenet.pt", lenet_config(), some_progress(), lenet.backend,
                         lenet.sgd);
  model::register_model("linear", [](const config::ModelConfig&) {
    return torch::nn::AnyModule(torch::nn::Linear(784, 10));
  });
  const config::Config other =
      config::resolve_config(std::nullopt, "test", {"model.name=linear"}, {"lenet", "linear"});
  parallel::SingleDevice backend(model::make_model(other.model), torch::kCPU);
  torch::optim::SGD sgd(backend.parameters(), torch::optim::SGDOptions(0.1));
  try {
    train::load_checkpoint(dir / "lenet.pt", other, backend, sgd);
    FAIL("a LeNet checkpoint was loaded into a linear model");
  } catch (const core::Error& e) {
    CHECK(e.code() == core::ErrorCode::kConfig);
    CHECK_THAT(e.what(), Catch::Matchers::StartsWith((dir / "lenet.pt").string() +
                                                     ": the checkpoint holds model \"lenet\" with "
                                                     "parameters [20, 1, 3, 3], [20],") &&
                             Catch::Matchers::EndsWith(
                                 "but the config builds \"linear\" with [10, 784], [10]"));
  }
  core::write_file_atomic(dir / "junk.pt", "not a checkpoint");
  CHECK_THROWS_MATCHES(
      train::load_checkpoint(dir / "junk.pt", other, backend, sgd), core::Error,
      Catch::Matchers::Predicate<core::Error>([&](const core::Error& e) {
        return e.code() == core::ErrorCode::kIo &&
               std::string(e.what()).rfind(
                   (dir / "junk.pt").string() +
                       ": a text file (16 bytes), where torch.save writes a zip archive",
                   0) == 0;
      }));
}

TEST_CASE("a checkpoint whose record lacks a field is refused and loads nothing (found by fuzzing)",
          "[train][checkpoint]") {
  TempDir dir;
  const serialize::ValuePtr root = whole_checkpoint(dir);
  // The same checkpoint with "partial" gone from its record, as the fuzzer made it.
  serialize::ValuePtr& record = entry_of(root, "record");
  nlohmann::json meta = nlohmann::json::parse(record->text);
  meta.erase("partial");
  record = serialize::text(meta.dump());
  core::write_file_atomic(dir / "damaged.pt", serialize::encode_torch_file(*root));

  Trainee other(2);
  const std::vector<torch::Tensor> copies = snapshot(other);
  CHECK_THAT(refusal(dir / "damaged.pt", other),
             Catch::Matchers::StartsWith((dir / "damaged.pt").string() +
                                         ": a damaged checkpoint record: "));
  CHECK(unchanged(other, copies));
}

TEST_CASE(
    "a checkpoint whose record holds numbers no run writes is refused and loads nothing (a float "
    "for a count, a position before the start, epochs that do not match it, a best epoch past "
    "them, a negative loss scale, counts that would overflow when the run adds to them)",
    "[train][checkpoint]") {
  TempDir dir;
  const serialize::ValuePtr root = whole_checkpoint(dir);
  const nlohmann::json whole = nlohmann::json::parse(entry_of(root, "record")->text);
  Trainee other(2);
  const std::vector<torch::Tensor> copies = snapshot(other);
  const auto damage = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json record = whole;
    change(record);
    entry_of(root, "record") = serialize::text(record.dump());
    core::write_file_atomic(dir / "damaged.pt", serialize::encode_torch_file(*root));
    return refusal(dir / "damaged.pt", other);
  };
  const std::string named = (dir / "damaged.pt").string() + ": a damaged checkpoint record: ";
  // A float where a count belongs would be cast to an integer, which C++ leaves undefined.
  CHECK_THAT(
      damage([](nlohmann::json& r) { r["batches_done"] = 1e300; }),
      Catch::Matchers::StartsWith(named) && ContainsSubstring("batches_done: not an integer"));
  CHECK_THAT(damage([](nlohmann::json& r) { r["epoch"] = -3; }),
             Catch::Matchers::StartsWith(named) &&
                 ContainsSubstring("epoch is -3, a count no run reaches"));
  CHECK_THAT(damage([](nlohmann::json& r) { r["epoch"] = 7; }),
             ContainsSubstring("it is at epoch 7 but holds 2 finished epochs"));
  CHECK_THAT(damage([](nlohmann::json& r) { r["early_stopping"]["best_epoch"] = 99; }),
             ContainsSubstring("early_stopping.best_epoch is 99 of 2 epochs"));
  CHECK_THAT(damage([](nlohmann::json& r) { r["early_stopping"]["without_improvement"] = 3; }),
             ContainsSubstring("early_stopping.without_improvement counts 3 evaluations in 2"));
  CHECK_THAT(damage([](nlohmann::json& r) { r["scaler"]["scale"] = -1.0; }),
             ContainsSubstring("scaler.scale is no number a loss scaler reaches"));
  CHECK_THAT(damage([](nlohmann::json& r) { r["partial"]["correct"] = 41; }),
             ContainsSubstring("partial: its sums of the epoch under way are no counts"));
  // Counts a resumed run adds to: past 2^53 (what the ranks' double sums hold), adding overflows.
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  CHECK_THAT(damage([&](nlohmann::json& r) { r["partial"]["samples"] = kHuge; }),
             ContainsSubstring("partial.samples is " + std::to_string(kHuge) +
                               ", a count no run reaches"));
  CHECK_THAT(damage([&](nlohmann::json& r) { r["epochs"][1]["train_samples"] = kHuge; }),
             ContainsSubstring("epochs[1].train_samples is " + std::to_string(kHuge)));
  CHECK_THAT(damage([&](nlohmann::json& r) { r["global_step"] = kHuge; }),
             ContainsSubstring("global_step is " + std::to_string(kHuge)));
  CHECK_THAT(damage([&](nlohmann::json& r) { r["scaler"]["clean_steps"] = kHuge; }),
             ContainsSubstring("scaler.clean_steps is " + std::to_string(kHuge)));
  // nlohmann's own prefix ("[json.exception.type_error.302]") names nothing a user needs.
  CHECK_THAT(damage([](nlohmann::json& r) { r["epoch"] = 7; }),
             !ContainsSubstring("[json.exception"));
  CHECK(unchanged(other, copies));
}

TEST_CASE(
    "a checkpoint with a damaged optimizer state is refused and changes no parameter "
    "(found by fuzzing)",
    "[train][checkpoint]") {
  TempDir dir;
  const serialize::ValuePtr root = whole_checkpoint(dir);
  const std::string whole_optimizer = serialize::encode_torch_file(*entry_of(root, "optimizer"));
  Trainee other(2);
  other.step(0);  // some momentum, which a refusal must leave alone too
  const std::vector<torch::Tensor> copies = snapshot(other);
  const auto momentum = [&]() {
    return optim::read_param_state(other.sgd, other.backend.parameters()[0])->tensors[0].clone();
  };
  const torch::Tensor momentum_before = momentum();

  // The state empty; then one momentum buffer of another shape; then the state of Adam.
  const auto damage = [&](const std::function<void(serialize::Value&)>& change) {
    serialize::ValuePtr optimizer = serialize::decode_torch_file(whole_optimizer);
    change(*optimizer);
    entry_of(root, "optimizer") = optimizer;
    core::write_file_atomic(dir / "damaged.pt", serialize::encode_torch_file(*root));
    return refusal(dir / "damaged.pt", other);
  };
  CHECK_THAT(damage([](serialize::Value& o) { o.entries.clear(); }),
             ContainsSubstring("damaged.pt: a damaged checkpoint: the optimizer's state has no "
                               "entry \"state\""));
  CHECK_THAT(damage([](serialize::Value& o) {
               serialize::Value& first = *o.entries[0].second->entries[0].second;
               first.entries[0].second = serialize::tensor(torch::zeros({3}));
             }),
             ContainsSubstring("the optimizer's state of parameter 0's momentum_buffer has shape "
                               "[3], its parameter [20, 1, 3, 3]"));
  CHECK_THAT(damage([](serialize::Value& o) {
               serialize::Value& first = *o.entries[0].second->entries[0].second;
               first.entries = {
                   {serialize::text("step"), serialize::integer(1)},
                   {serialize::text("exp_avg"), serialize::tensor(torch::zeros({1}))},
                   {serialize::text("exp_avg_sq"), serialize::tensor(torch::zeros({1}))}};
             }),
             ContainsSubstring("the optimizer's state of parameter 0 is not the state of SGD"));
  CHECK(unchanged(other, copies));
  CHECK(torch::equal(momentum(), momentum_before));
}

TEST_CASE(
    "a checkpoint whose generator state would read past its 624 words is refused, a real one "
    "taken",
    "[train][checkpoint][security]") {
  TempDir dir;
  const serialize::ValuePtr root = whole_checkpoint(dir);
  const torch::Tensor state = entry_of(root, "cpu_rng")->tensor.clone();
  // Where ATen keeps the Mersenne Twister's position: `left` (int) at byte 8, `next` at byte 16.
  const auto position = [&](int32_t left, uint64_t next, int32_t seeded = 1) {
    torch::Tensor changed = state.clone();
    std::memcpy(changed.data_ptr<uint8_t>() + 8, &left, sizeof left);
    std::memcpy(changed.data_ptr<uint8_t>() + 12, &seeded, sizeof seeded);
    std::memcpy(changed.data_ptr<uint8_t>() + 16, &next, sizeof next);
    entry_of(root, "cpu_rng") = serialize::tensor(changed);
    core::write_file_atomic(dir / "rng.pt", serialize::encode_torch_file(*root));
  };
  Trainee other(2);
  int32_t left = 0;
  std::memcpy(&left, state.data_ptr<uint8_t>() + 8, sizeof left);
  uint64_t next = 0;
  std::memcpy(&next, state.data_ptr<uint8_t>() + 16, sizeof next);
  CHECK(((left == 1 && next == 0) || left + next == 625));  // the layout read is the real one
  for (const auto& [bad_left, bad_next] : std::vector<std::pair<int32_t, uint64_t>>{
           {624, 624}, {0, 0}, {-1, 0}, {625, 0}, {2, 624}, {300, 326}}) {
    INFO("left " << bad_left << ", next " << bad_next);
    position(bad_left, bad_next);
    CHECK_THAT(refusal(dir / "rng.pt", other),
               ContainsSubstring("rng.pt: a damaged checkpoint: the checkpoint's cpu_rng is at a "
                                 "position its generator cannot draw from"));
  }
  position(624, 1, /*seeded=*/0);
  CHECK_THAT(refusal(dir / "rng.pt", other), ContainsSubstring("cannot draw from"));
  for (const auto& [good_left, good_next] :
       std::vector<std::pair<int32_t, uint64_t>>{{1, 0}, {624, 1}, {1, 624}, {300, 325}}) {
    position(good_left, good_next);
    train::load_checkpoint(dir / "rng.pt", lenet_config(), other.backend, other.sgd);
    CHECK(torch::rand({1}).item<float>() >= 0);  // a draw from it
  }
}

TEST_CASE("a checkpoint whose record's config is no object is refused, not flattened into warnings",
          "[train][checkpoint][security]") {
  TempDir dir;
  const serialize::ValuePtr root = whole_checkpoint(dir);
  auto record = nlohmann::json::parse(entry_of(root, "record")->text);
  record["config"] = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) record["config"].push_back(i);  // a warning a key, once
  entry_of(root, "record") = serialize::text(record.dump());
  core::write_file_atomic(dir / "listed.pt", serialize::encode_torch_file(*root));
  Trainee other(2);
  CHECK_THAT(refusal(dir / "listed.pt", other),
             ContainsSubstring("listed.pt: a damaged checkpoint record: "));
  CHECK_THAT(refusal(dir / "listed.pt", other), ContainsSubstring("its config is no object"));
}

TEST_CASE("a checkpoint whose pickle declares a 4 GB string is refused unread (found by fuzzing)",
          "[train][checkpoint]") {
  TempDir dir;
  whole_checkpoint(dir);
  Trainee lenet(1);
  // Copy the archive record by record, with the length of the record's JSON text in data.pkl
  // (BINUNICODE: 'X', 4 bytes of length, the text) set to 0xfffffffe, as the fuzzer did.
  // LibTorch's unpickler reserved that much before finding the stream too short.
  const std::string damaged =
      edit_data_pkl(core::read_text_file(dir / "whole.pt"), [](std::string& bytes) {
        const size_t text = bytes.find("{\"batches_done\"");
        REQUIRE(text != std::string::npos);
        REQUIRE(bytes[text - 5] == 'X');
        bytes.replace(text - 4, 4, std::string("\xfe\xff\xff\xff", 4));
      });
  core::write_file_atomic(dir / "damaged.pt", damaged);
  CHECK_THAT(refusal(dir / "damaged.pt", lenet),
             ContainsSubstring("damaged.pt: not a readable dptrain checkpoint: the "
                               "pickle stream ends inside an operand of 4294967294 "
                               "bytes"));
}

TEST_CASE("a checkpoint with one byte changed is refused by its checksums (found by fuzzing)",
          "[train][checkpoint]") {
  // LibTorch checks no CRCs, and a changed byte in a TorchScript record crashed its importer;
  // here a byte of the JSON record in data.pkl, changed in place.
  TempDir dir;
  whole_checkpoint(dir);
  Trainee lenet(1);
  std::string bytes = core::read_text_file(dir / "whole.pt");
  const size_t text = bytes.find("{\"batches_done\"");
  REQUIRE(text != std::string::npos);
  bytes[text + 2] = 'c';  // "catches_done"
  core::write_file_atomic(dir / "flipped.pt", bytes);
  CHECK_THAT(refusal(dir / "flipped.pt", lenet),
             ContainsSubstring("flipped.pt: not a readable dptrain checkpoint: a "
                               "damaged zip archive: record data.pkl does not match "
                               "its checksum"));
}

TEST_CASE("a crash while a checkpoint is written leaves the previous one whole",
          "[train][checkpoint]") {
  const config::Config config = lenet_config();
  TempDir dir;
  const auto path = dir / "epoch-0001.pt";
  Trainee original(1);
  original.step(0);
  train::save_checkpoint(path, config, some_progress(), original.backend, original.sgd);
  const std::string before = core::read_text_file(path);

  // A child process starts replacing the file with 256 MiB and is killed mid-write: the crash.
  const std::string big(256u << 20, 'x');
  const pid_t child = ::fork();
  if (child == 0) {
    core::write_file_atomic(path, big);
    ::_exit(0);
  }
  // Its temporary file: "epoch-0001.pt.tmp.<pid>.<random>".
  const std::string prefix = path.filename().string() + ".tmp." + std::to_string(child) + ".";
  const auto temporary = [&]() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir.path(), ec)) {
      if (e.path().filename().string().rfind(prefix, 0) == 0) return e.path();
    }
    return std::filesystem::path();
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::filesystem::path tmp;
  std::error_code ec;
  while ((tmp = temporary()).empty() || std::filesystem::file_size(tmp, ec) == 0 || ec) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  CHECK(std::filesystem::file_size(tmp) < big.size());  // it really was cut short

  CHECK(core::read_text_file(path) == before);
  CHECK(run::latest_checkpoint(dir.path()) == path);
  Trainee resumed(2);
  train::load_checkpoint(path, config, resumed.backend, resumed.sgd);
  CHECK(same_parameters(original.backend, resumed.backend));
}
