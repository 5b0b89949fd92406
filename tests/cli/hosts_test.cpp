// Several machines over a real network, played by test hosts (support/test_hosts.h): network
// namespaces on one switch, each with its own address and name. dptrain's launcher runs on each
// as docs/backends.md's multi-node recipe says, with no GLOO_SOCKET_IFNAME: the ranks must find the
// interface that reaches the master themselves, train as one machine's ranks do, and name the
// peer that is lost when a link is cut or a host never starts.
#include "support/catch.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"
#include "support/test_hosts.h"

using namespace dptrain::testing;

namespace {

constexpr int kPort = 29531;  // on the test hosts' own network: nothing else listens there

std::vector<std::string> settings(const TempDir& dir, int epochs, int timeout_s) {
  std::vector<std::string> args;
  for (const std::string& setting :
       {"data.dir=" + (dir / "data").string(), std::string("data.batch_size=40"),
        "train.epochs=" + std::to_string(epochs), std::string("runtime.threads=1"),
        std::string("parallel.backend=ddp"), "parallel.timeout_s=" + std::to_string(timeout_s),
        std::string("log.every_steps=1"), std::string("checkpoint.every_steps=5")}) {
    args.insert(args.end(), {"--set", setting});
  }
  return args;
}

// One rank on each of `nnodes` hosts, the master named by `master`.
std::vector<std::string> node(const TempDir& dir, int nnodes, int rank, const std::string& master,
                              int epochs, int timeout_s) {
  std::vector<std::string> args = {"train",
                                   "--nnodes",
                                   std::to_string(nnodes),
                                   "--node-rank",
                                   std::to_string(rank),
                                   "--master-addr",
                                   master,
                                   "--master-port",
                                   std::to_string(kPort),
                                   "--output",
                                   (dir / ("node" + std::to_string(rank))).string(),
                                   "--set",
                                   "parallel.devices=[\"cpu\"]"};
  const auto rest = settings(dir, epochs, timeout_s);
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

// The same training on this machine alone: two ranks under one launcher.
std::filesystem::path one_machine_run(const TempDir& dir, int epochs) {
  const auto out = dir / "one-machine";
  std::vector<std::string> args = {"train", "--output", out.string(), "--set",
                                   "parallel.devices=[\"cpu\",\"cpu\"]"};
  const auto rest = settings(dir, epochs, 60);
  args.insert(args.end(), rest.begin(), rest.end());
  const auto result = run_dptrain(shell_words(args));
  INFO(result.err);
  REQUIRE(result.status == 0);
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

#define SKIP_WITHOUT_TEST_HOSTS()                                      \
  do {                                                                 \
    if (const auto why = TestHosts::unavailable()) DPTRAIN_SKIP(*why); \
  } while (false)

// `chosen_by`: why rank 0's start line says it listens where it does.
void trains_as_one_machine(TestHosts::Naming naming, const std::string& master,
                           const std::string& chosen_by) {
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  TestHosts hosts(2, naming);
  BackgroundRun node0(node(dir, 2, 0, master, 2, 60), kJobSecretEnv, hosts.on(0));
  BackgroundRun node1(node(dir, 2, 1, master, 2, 60), kJobSecretEnv, hosts.on(1));
  const auto end1 = node1.finish(120);
  const auto end0 = node0.finish(120);
  INFO(end0.err);
  INFO(end1.err);
  REQUIRE(end0.status == 0);
  REQUIRE(end1.status == 0);
  // Each rank listens on its own test address, chosen by the route to the master.
  CHECK_THAT(end0.err, ContainsSubstring("rank 0 listens on " + TestHosts::address(0)));
  CHECK_THAT(end0.err, ContainsSubstring(chosen_by));
  const auto one = one_machine_run(dir, 2);
  const auto two = dir / "node0";
  // The same sums in the same order: bit for bit the one machine's parameters and loss.
  CHECK(max_relative_difference(load_parameters(two / "model.pt"),
                                load_parameters(one / "model.pt")) == 0);
  CHECK(summary_of(two).at("test_loss") == summary_of(one).at("test_loss"));
  CHECK(summary_of(two).at("hosts") ==
        nlohmann::json::array({TestHosts::name(0), TestHosts::name(1)}));
}

}  // namespace

TEST_CASE(
    "two stock Debian hosts, the master given by address and no interface variable, train as "
    "one machine does",
    "[cli][ddp][hosts]") {
  SKIP_WITHOUT_TEST_HOSTS();
  // Each host's own name resolves to 127.0.1.1: Gloo's default device would bind the loopback.
  trains_as_one_machine(TestHosts::Naming::kStockDebian, TestHosts::address(0),
                        "(the route to the master " + TestHosts::address(0) + ")");
}

TEST_CASE(
    "two stock Debian hosts that know each other's names: node 0, whose own name is a loopback "
    "address, listens where the route to node 1 leaves",
    "[cli][ddp][hosts]") {
  SKIP_WITHOUT_TEST_HOSTS();
  trains_as_one_machine(TestHosts::Naming::kStockDebianWithNames, TestHosts::name(0),
                        "(the route to rank 1 at " + TestHosts::address(1) +
                            ", since the master address resolves to this machine's loopback)");
}

TEST_CASE("two cluster hosts, the master given by name, train as one machine does",
          "[cli][ddp][hosts][slow]") {
  SKIP_WITHOUT_TEST_HOSTS();
  trains_as_one_machine(TestHosts::Naming::kCluster, TestHosts::name(0),
                        "(the route to the master " + TestHosts::name(0) + ")");
}

TEST_CASE(
    "a cut link ends every rank within the timeout and 10 s, naming the lost rank, its node and "
    "address, and the last checkpoint stays readable",
    "[cli][ddp][hosts][slow][timed]") {
  SKIP_WITHOUT_TEST_HOSTS();
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  TestHosts hosts(2, TestHosts::Naming::kCluster);
  constexpr int kTimeout = 10;
  BackgroundRun node0(node(dir, 2, 0, "host0", 500, kTimeout), kJobSecretEnv, hosts.on(0));
  BackgroundRun node1(node(dir, 2, 1, "host0", 500, kTimeout), kJobSecretEnv, hosts.on(1));
  REQUIRE(node0.wait_for_stderr("epoch 2 batch 3/10", 120));
  const auto cut = std::chrono::steady_clock::now();
  hosts.cut(1);
  const auto end0 = node0.finish(kTimeout + 10);
  const double node0_seconds = seconds_since(cut);
  const auto end1 = node1.finish(kTimeout + 10);
  const double node1_seconds = seconds_since(cut);
  INFO(end0.err);
  INFO(end1.err);
  CHECK(end0.status == 8);
  CHECK(end1.status == 8);
  CHECK(node0_seconds < kTimeout + 10);
  CHECK(node1_seconds < kTimeout + 10);
  CHECK_THAT(end0.err, ContainsSubstring("rank 1 (node 1, " + TestHosts::address(1)));
  CHECK_THAT(end0.err, ContainsSubstring("has stopped beating"));
  CHECK_THAT(end1.err, ContainsSubstring("the store at host0:" + std::to_string(kPort) +
                                         " (node 0) has not answered this rank"));
  // The newest checkpoint node 0 wrote is whole: evaluate reads it.
  std::filesystem::path newest;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "node0" / "checkpoints")) {
    if (entry.path().extension() == ".pt" && entry.path() > newest) newest = entry.path();
  }
  REQUIRE_FALSE(newest.empty());
  const auto evaluated = run_dptrain(shell_words({"evaluate", "--model", newest.string()}));
  INFO(evaluated.err);
  CHECK(evaluated.status == 0);
}

TEST_CASE("a third host that never starts is named by the two that did",
          "[cli][ddp][hosts][slow][timed]") {
  SKIP_WITHOUT_TEST_HOSTS();
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  TestHosts hosts(3, TestHosts::Naming::kCluster);
  constexpr int kTimeout = 8;
  const auto start = std::chrono::steady_clock::now();
  auto args = [&](int rank) {
    auto words = node(dir, 3, rank, "host0", 2, kTimeout);
    words.insert(words.end(), {"--set", "data.batch_size=42"});  // 3 ranks share it evenly
    return words;
  };
  BackgroundRun node0(args(0), kJobSecretEnv, hosts.on(0));
  BackgroundRun node1(args(1), kJobSecretEnv, hosts.on(1));
  const auto end0 = node0.finish(kTimeout + 20);
  const auto end1 = node1.finish(kTimeout + 20);
  const double seconds = seconds_since(start);
  INFO(end0.err);
  INFO(end1.err);
  CHECK(end0.status == 8);
  CHECK(end1.status == 8);
  CHECK(seconds < kTimeout + 10);
  CHECK_THAT(end0.err, ContainsSubstring("ddp: rank 2 (node 2) never reached the rendezvous"));
  // Node 1 names rank 2 too, from the store, unless node 0 (whose launcher serves the store)
  // ended first: then it says that the store went.
  const bool named = end1.err.find("rank 2 never arrived") != std::string::npos;
  const bool store_gone =
      end1.err.find("the store closed the connection") != std::string::npos ||
      end1.err.find("could not reach the rendezvous store") != std::string::npos;
  CHECK((named || store_gone));
  CHECK_FALSE(std::filesystem::exists(dir / "node0"));
}

TEST_CASE("a loopback master address in a job across machines is refused at once, not waited out",
          "[cli][ddp][hosts][timed]") {
  SKIP_WITHOUT_TEST_HOSTS();
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  TestHosts hosts(2, TestHosts::Naming::kCluster);
  const auto start = std::chrono::steady_clock::now();
  // What torchrun hands out when the hosts have no names of their own.
  BackgroundRun node1(node(dir, 2, 1, "localhost", 2, 60), kJobSecretEnv, hosts.on(1));
  const auto end1 = node1.finish(30);
  INFO(end1.err);
  CHECK(end1.status == 8);
  CHECK(seconds_since(start) < 10);
  CHECK_THAT(end1.err, ContainsSubstring("rank 1 (node 1): the master address \"localhost\" is "
                                         "127.0.0.1 here, a loopback address, but the job spans "
                                         "2 machines"));
  CHECK_THAT(end1.err, ContainsSubstring("hint: give every node the address or name by which the "
                                         "other machines reach node 0"));
}
