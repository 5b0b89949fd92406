// dptrain under a torchrun of the other side of PyTorch 2.0's TCPStore protocol change, when the
// ranks use torchrun's agent store: a clear error within the probe's time that names the way out,
// and training once it is taken. Each side's test runs where such a torchrun and such a dptrain
// meet: Debian's torchrun (1.13) beside a dptrain of pip's torch 2.x (scripts/check_torch_pip.sh),
// the venv's torchrun 2.x beside a dptrain of Debian's LibTorch 1.13. And a store that never
// answers at all, on every build.
#include "support/catch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <regex>

#include "core/torch_compat.h"
#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

// One epoch of the tiny data set in `dir`/data on 2 ddp CPU ranks, and 5 s for the store's probe
// (a later --set wins).
void add_settings(std::vector<std::string>& words, const TempDir& dir) {
  for (const std::string& set :
       {"data.dir=" + (dir / "data").string(), std::string("data.batch_size=20"),
        std::string("train.epochs=1"), std::string("runtime.threads=1"),
        std::string("parallel.backend=ddp"), std::string("parallel.devices=[\"cpu\",\"cpu\"]"),
        std::string("parallel.timeout_s=5")}) {
    words.insert(words.end(), {"--set", set});
  }
}

ProcessResult run_words(const std::vector<std::string>& words, const std::filesystem::path& out,
                        const std::vector<std::string>& env = {}) {
  return run_program(
      "/bin/sh", "-c " + shell_words({shell_words(words) + " --output " + out.string()}), {}, env);
}

// Debian's torchrun, where its python3's torch is a 1.x.
std::filesystem::path torchrun_of_pytorch_1() {
  const std::filesystem::path torchrun = "/usr/bin/torchrun";
  if (!std::filesystem::exists(torchrun)) return {};
  const auto version =
      run_program("/usr/bin/python3",
                  "-c 'import sys, torch; sys.exit(int(torch.__version__.split(\".\")[0]) != 1)'");
  return version.status == 0 ? torchrun : std::filesystem::path();
}

}  // namespace

TEST_CASE(
    "under torchrun 2.x's shared store a dptrain of LibTorch 1.13 ends with an error that names "
    "the way out, and trains once it is taken",
    "[cli][ddp][torchrun]") {
  const std::filesystem::path torchrun =
      venv_python().empty() ? "" : venv_python().parent_path() / "torchrun";
  if (torchrun.empty() || !std::filesystem::exists(torchrun)) {
    DPTRAIN_SKIP("no torchrun 2.x in the project's venv (scripts/venv.sh torch)");
  }
  TempDir dir;
  write_tiny_dataset(dir / "data", 120, 40);
  // --rdzv_backend c10d: torchrun 2.x then serves the ranks its rendezvous store.
  std::vector<std::string> words = {torchrun.string(),
                                    "--nnodes",
                                    "1",
                                    "--nproc_per_node",
                                    "2",
                                    "--rdzv_backend",
                                    "c10d",
                                    "--rdzv_endpoint",
                                    "127.0.0.1:" + std::to_string(free_port()),
                                    "--max_restarts",
                                    "0",
                                    "--no_python",
                                    DPTRAIN_BINARY,
                                    "train"};
  add_settings(words, dir);
  const auto shared = run_words(words, dir / "shared");
  INFO(shared.err);
  if (dptrain::core::compat::kStoreSpeaksPre2Protocol) {
    CHECK(shared.status != 0);
    CHECK_THAT(shared.err, ContainsSubstring("answered no query within 5 s: a torchrun of "
                                             "PyTorch 2.x serves a store protocol"));
    CHECK_THAT(shared.err, ContainsSubstring("export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"));
    const auto own = run_words(words, dir / "own", {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"});
    INFO(own.err);
    CHECK(own.status == 0);
    CHECK(summary_of(dir / "own").at("world_size") == 2);
  } else {
    CHECK(shared.status == 0);  // the same protocol on both sides
    CHECK(summary_of(dir / "shared").at("world_size") == 2);
  }
}

TEST_CASE(
    "under torchrun 1.13's agent store a dptrain of LibTorch 2.x ends with an error that names "
    "the way out, and trains once it is taken",
    "[cli][ddp][torchrun][timed]") {
  if (dptrain::core::compat::kStoreSpeaksPre2Protocol) {
    DPTRAIN_SKIP(
        "this dptrain's LibTorch speaks torchrun 1.x's store protocol (the test of "
        "train's torchrun example runs it)");
  }
  const std::filesystem::path torchrun = torchrun_of_pytorch_1();
  if (torchrun.empty())
    DPTRAIN_SKIP("no torchrun of PyTorch 1.x at /usr/bin (Debian's python3-torch)");
  TempDir dir;
  write_tiny_dataset(dir / "data", 120, 40);
  // torchrun 1.13's default rendezvous (static) serves the ranks its agent's store; Debian's
  // needs --redirects and --tee.
  const std::vector<std::string> launcher = {torchrun.string(),
                                             "--nproc_per_node",
                                             "2",
                                             "--redirects",
                                             "9:0",
                                             "--tee",
                                             "9:0",
                                             "--max_restarts",
                                             "0"};
  const std::vector<std::string> program = {"--no_python", DPTRAIN_BINARY, "train"};
  std::vector<std::string> shared = launcher;
  shared.insert(shared.end(), {"--master_port", std::to_string(free_port())});
  shared.insert(shared.end(), program.begin(), program.end());
  add_settings(shared, dir);
  const auto started = std::chrono::steady_clock::now();
  const auto refused = run_words(shared, dir / "shared");
  const auto took = std::chrono::steady_clock::now() - started;
  INFO(refused.err);
  CHECK(refused.status != 0);
  // The probe's 5 s and LibTorch 2.x's backoff past it (up to half the time again), not the
  // 10 minutes of torchrun's default timeout; without a backtrace of every attempt.
  CHECK(took < std::chrono::seconds(20));
  CHECK_THAT(refused.err, !ContainsSubstring("frame #"));
  CHECK_THAT(refused.err, ContainsSubstring("rank 0: could not reach torchrun's store at "
                                            "127.0.0.1:"));
  // Within the 5 s, or after LibTorch 2.x's backoff took it past them.
  CHECK(std::regex_search(refused.err,
                          std::regex(R"( (within 5 s|after [0-9.]+ s \(of 5 s allowed\)): )")));
  CHECK_THAT(refused.err, ContainsSubstring("a torchrun of PyTorch 1.x closes this dptrain's "
                                            "(LibTorch " +
                                            dptrain::core::compat::libtorch_version() +
                                            ") connections: give it --standalone or "
                                            "--rdzv_backend c10d"));
  // The way out: c10d's rendezvous, under which torchrun 1.13 leaves the ranks their own store.
  std::vector<std::string> own = launcher;
  own.insert(own.end(), {"--rdzv_backend", "c10d", "--rdzv_endpoint",
                         "127.0.0.1:" + std::to_string(free_port())});
  own.insert(own.end(), program.begin(), program.end());
  add_settings(own, dir);
  const auto trained = run_words(own, dir / "own");
  INFO(trained.err);
  CHECK(trained.status == 0);
  CHECK(summary_of(dir / "own").at("world_size") == 2);
}

TEST_CASE(
    "a torchrun store that accepts a rank and never answers ends it within the probe's time, "
    "naming the store",
    "[cli][ddp][torchrun][timed]") {
  // A socket that listens and never accepts: the kernel completes the connection, and nothing
  // ever answers (a wrong MASTER_PORT on a silent service, a hostile server).
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), length) == 0);
  REQUIRE(::listen(listener, 8) == 0);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const std::string port = std::to_string(ntohs(address.sin_port));
  TempDir dir;
  write_tiny_dataset(dir / "data", 120, 40);
  std::vector<std::string> words = {"train"};
  add_settings(words, dir);
  words.insert(words.end(), {"--set", "parallel.timeout_s=2", "--output", (dir / "run").string()});
  const auto started = std::chrono::steady_clock::now();
  // Rank 1 of 2 as torchrun's agent starts it when it shares its store.
  const auto run = run_dptrain(
      shell_words(words), {},
      {"WORLD_SIZE=2", "RANK=1", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
       "MASTER_PORT=" + port, "TORCHELASTIC_USE_AGENT_STORE=True"});
  const auto took = std::chrono::steady_clock::now() - started;
  ::close(listener);
  INFO(run.err);
  CHECK(run.status != 0);
  // 2 s, or LibTorch 2.x's 2 s of connecting and half as much again for its retries: not the
  // 10 minutes of parallel.timeout_s's default, nor for ever.
  CHECK(took < std::chrono::seconds(15));
  CHECK_THAT(run.err, ContainsSubstring("rank 1: torchrun's store at 127.0.0.1:" + port));
  CHECK_THAT(run.err, ContainsSubstring(dptrain::core::compat::kStoreSpeaksPre2Protocol
                                            ? " answered no query within 2 s"
                                            : " did not answer this dptrain's first query "
                                              "within 2 s"));
}
