// Files from elsewhere, opened as an attacker would hope: a TorchScript archive that runs code
// when loaded, given to every path that opens a model or checkpoint; and the other way round,
// PyTorch opening dptrain's checkpoints with weights_only=True.
#include "support/catch.h"

#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "serialize/little_endian.h"
#include "support/fixtures.h"
#include "support/skip.h"
#include "support/torch_archives.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

const std::string kPython = "/usr/bin/python3";
const std::string kScripts = std::string(DPTRAIN_SOURCE_DIR) + "/tests/python/";

// 40 training images of 10 a batch, one epoch: 4 steps.
std::string tiny_run(const TempDir& dir) {
  return " --set data.dir=" + (dir / "data").string() +
         " --set data.batch_size=10 --set train.epochs=1 --set runtime.threads=1"
         " --set parallel.devices=cpu";
}

// A grey 28x28 PGM for predict.
void write_pgm(const std::filesystem::path& path) {
  write_text(path, "P5\n28 28\n255\n" + std::string(28 * 28, '\x80'));
}

// tests/python/read_checkpoint.py under `python`: PyTorch opens the run's first checkpoint and
// finds its parameters (model.pt's) and the optimizer's state.
void check_pytorch_reads_checkpoint(const std::filesystem::path& python,
                                    const std::filesystem::path& out,
                                    const std::string& optimizer) {
  const auto read = run_program(
      python,
      shell_words({kScripts + "read_checkpoint.py",
                   (out / "checkpoints" / "epoch-0001.pt").string(), (out / "model.pt").string()}));
  INFO(python << "\n" << read.err);
  REQUIRE(read.status == 0);
  const auto answer = nlohmann::json::parse(read.out);
  INFO("PyTorch " << answer.at("torch").get<std::string>());
  CHECK(answer.at("keys") ==
        nlohmann::json::array({"dptrain_checkpoint", "record", "parameters", "buffers",
                               "best_weights", "optimizer", "cpu_rng"}));
  CHECK(answer.at("format") == 4);
  CHECK(answer.at("model") == "lenet");
  CHECK(answer.at("equal") == true);
  CHECK(answer.at("param_groups") ==
        nlohmann::json::parse(R"([{"params": [0, 1, 2, 3, 4, 5, 6, 7]}])"));
  CHECK(answer.at("rng_bytes") == at::detail::getDefaultCPUGenerator().get_state().numel());
  if (optimizer == "sgd") {
    CHECK(answer.at("state") == nlohmann::json::array({"momentum_buffer"}));
  } else {
    CHECK(answer.at("state") == nlohmann::json::array({"exp_avg", "exp_avg_sq", "step"}));
    CHECK(answer.at("step") == 4);
  }
}

}  // namespace

TEST_CASE(
    "a model file whose storage claims 1.5 GB over a hole is refused unread through evaluate, "
    "predict, --init-from, --resume FILE and --resume auto, and its names reach the terminal "
    "escaped",
    "[cli][security]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 40, 20);
  write_pgm(dir / "image.pgm");
  // {"0.weight\x1b]0;pwned\x07": a view of `numel` floats of storage "0"}.
  const auto text = [](const std::string& t) {
    std::string out = "X";
    serialize::append_le(out, t.size(), 4);
    return out + t;
  };
  const auto int32 = [](int64_t v) {
    std::string out = "J";
    serialize::append_le(out, static_cast<uint64_t>(v), 4);
    return out;
  };
  const auto state_dict = [&](int64_t numel) {
    return std::string("\x80\x02}(", 4) + text("0.weight\x1b]0;pwned\x07") +
           "ctorch._utils\n_rebuild_tensor_v2\n((" + text("storage") + "ctorch\nFloatStorage\n" +
           text("0") + text("cpu") + int32(numel) + "tQ" + int32(0) + "(" + int32(numel) +
           "t(K\x01ttRu.";
  };
  const std::string pickle = state_dict(int64_t{1} << 28);  // 1 GiB of floats, over a hole
  const auto sparse = dir / "sparse.pt";
  write_stored_zip(sparse, {{"data.pkl", pickle, 0}, {"data/0", "", uint64_t{1} << 30}});
  const auto auto_run = dir / "auto";
  std::filesystem::create_directories(auto_run / "checkpoints");
  write_stored_zip(auto_run / "checkpoints" / "epoch-0001.pt",  // a copy would fill the hole
                   {{"data.pkl", pickle, 0}, {"data/0", "", uint64_t{1} << 30}});
  const std::string run = tiny_run(dir);
  const std::vector<std::pair<std::string, std::string>> paths = {
      {"evaluate --model " + sparse.string() + run, "storage data/0 of 1073741824 bytes makes"},
      {"predict --model " + sparse.string() + " " + (dir / "image.pgm").string(),
       "storage data/0 of 1073741824 bytes makes"},
      {"train --init-from " + sparse.string() + run + " --output " + (dir / "init").string(),
       "bytes, more than any file of this model's weights can take"},
      // Checked first as a checkpoint, by its record alone: it has none.
      {"train --resume " + sparse.string() + run + " --output " + (dir / "resume").string(),
       "sparse.pt: not a readable dptrain checkpoint: a torch.save file without dptrain's record"},
      {"train --resume auto" + run + " --output " + auto_run.string(), "epoch-0001.pt: "},
  };
  for (const auto& [args, says] : paths) {
    INFO(args);
    const auto r = run_dptrain(args);
    INFO(r.err);
    CHECK(r.status == 5);
    CHECK_THAT(r.err, ContainsSubstring(says));
    CHECK(r.err.find('\x1b') == std::string::npos);
    CHECK(r.out.find('\x1b') == std::string::npos);
  }
  // The same file with a storage that fits: the key reaches the terminal escaped.
  write_stored_zip(sparse, {{"data.pkl", state_dict(1), 0}, {"data/0", std::string(4, '\0'), 0}});
  const auto named = run_dptrain("evaluate --model " + sparse.string() + run);
  INFO(named.err);
  CHECK(named.status == 3);  // the model's own keys are missing: a config error
  CHECK_THAT(named.err, ContainsSubstring("unexpected 0.weight\\x1b]0;pwned\\x07 [1]"));
  CHECK(named.err.find('\x1b') == std::string::npos);
}

TEST_CASE(
    "a TorchScript archive that runs code when loaded runs nothing through evaluate, predict, "
    "--init-from, --resume FILE or --resume auto",
    "[cli][security]") {
  if (!python_torch_present()) {
    DPTRAIN_SKIP("needs Debian's python3-torch (scripts/setup.sh installs it)");
  }
  TempDir dir;
  write_tiny_dataset(dir / "data", 40, 20);
  const std::string precious = "precious bytes an attacker wants to overwrite\n";
  const auto victim = dir / "victim.txt";
  write_text(victim, precious);
  const auto evil = dir / "evil.pt";
  const auto made = run_program(
      kPython, shell_words({kScripts + "make_code_archive.py", evil.string(), victim.string()}));
  INFO(made.err);
  REQUIRE(made.status == 0);
  write_pgm(dir / "image.pgm");
  const auto auto_run = dir / "auto";
  std::filesystem::create_directories(auto_run / "checkpoints");
  std::filesystem::copy_file(evil, auto_run / "checkpoints" / "epoch-0001.pt");

  const std::string run = tiny_run(dir);
  const std::vector<std::pair<std::string, std::string>> paths = {
      {"evaluate --model " + evil.string() + run, evil.string()},
      {"predict --model " + evil.string() + " " + (dir / "image.pgm").string(), evil.string()},
      {"train --init-from " + evil.string() + run + " --output " + (dir / "init").string(),
       evil.string()},
      {"train --resume " + evil.string() + run + " --output " + (dir / "resume").string(),
       evil.string()},
      {"train --resume auto" + run + " --output " + auto_run.string(),
       (auto_run / "checkpoints" / "epoch-0001.pt").string()},
  };
  for (const auto& [args, named] : paths) {
    INFO(args);
    const auto r = run_dptrain(args);
    INFO(r.err);
    CHECK(r.status == 5);
    CHECK_THAT(r.err, ContainsSubstring(named + ": "));
    CHECK_THAT(r.err, ContainsSubstring("a TorchScript archive (it holds code/"));
    CHECK(core::read_text_file(victim) == precious);
  }

  // The archive is live: PyTorch's own loader runs it and the victim is overwritten.
  const auto loaded = run_program(
      kPython,
      shell_words({"-c", "import sys, torch; torch.jit.load(sys.argv[1])", evil.string()}));
  INFO(loaded.err);
  CHECK(loaded.status == 0);
  CHECK(core::read_text_file(victim) == std::string(precious.size(), 'X'));
}

TEST_CASE(
    "PyTorch opens dptrain's checkpoints with weights_only=True and finds the run's parameters "
    "and optimizer state",
    "[cli][security]") {
  const auto pythons = pytorch_pythons();
  if (pythons.empty()) {
    DPTRAIN_SKIP(
        "needs PyTorch: Debian's python3-torch (scripts/setup.sh) or the venv's (scripts/venv.sh "
        "torch)");
  }
  TempDir dir;
  write_tiny_dataset(dir / "data", 40, 20);
  for (const std::string optimizer : {"sgd", "adam"}) {
    DYNAMIC_SECTION(optimizer) {
      const auto out = dir / optimizer;
      const std::string momentum = optimizer == "sgd" ? " --set optimizer.momentum=0.9" : "";
      const auto r = run_dptrain("train" + tiny_run(dir) + " --set optimizer.name=" + optimizer +
                                 momentum + " --output " + out.string());
      INFO(r.err);
      REQUIRE(r.status == 0);
      // Debian's PyTorch 1.13, and PyPI's 2.x where the project's venv has it.
      for (const auto& python : pythons) {
        check_pytorch_reads_checkpoint(python, out, optimizer);
      }
    }
  }
}

TEST_CASE(
    "neither an overwrite nor a rewind removes or moves anything through a checkpoint folder "
    "that another user linked elsewhere",
    "[cli][security]") {
  if (::geteuid() != 0) DPTRAIN_SKIP("needs root, to give a link to another user (CI is root)");
  TempDir dir;
  write_tiny_dataset(dir / "data", 40, 20);
  const std::string two_epochs = tiny_run(dir) +
                                 " --set train.epochs=2 --set checkpoint.every_epochs=1"
                                 " --set checkpoint.keep_last=0 --output ";
  for (const std::string how : {"overwrite", "rewind"}) {
    INFO(how);
    const auto run = dir / how;
    REQUIRE(run_dptrain("train" + two_epochs + run.string()).status == 0);
    // The run's checkpoints are moved to a folder of the victim's, and a link of another user's
    // takes their place.
    const auto victim = dir / (how + "-victim");
    std::filesystem::rename(run / "checkpoints", victim);
    std::filesystem::create_directories(victim / "abandoned-20200101-000000");
    write_text(victim / "abandoned-20200101-000000" / "important.txt", "precious");
    std::filesystem::create_directory_symlink(victim, run / "checkpoints");
    REQUIRE(::lchown((run / "checkpoints").c_str(), 65534, 65534) == 0);
    const std::string tail = how == "overwrite"
                                 ? " --overwrite"
                                 : " --resume " + (run / "checkpoints" / "epoch-0001.pt").string();
    const auto refused = run_dptrain("train" + two_epochs + run.string() + tail);
    INFO(refused.err);
    CHECK(refused.status == 5);
    CHECK_THAT(refused.err, ContainsSubstring("a link that another user (uid 65534) made"));
    CHECK(read_bytes(victim / "abandoned-20200101-000000" / "important.txt") == "precious");
    CHECK(std::filesystem::exists(victim / "epoch-0001.pt"));
    CHECK(std::filesystem::exists(victim / "epoch-0002.pt"));
    CHECK(std::filesystem::exists(run / "model.pt"));
    CHECK(std::filesystem::exists(run / "summary.json"));
  }
}
