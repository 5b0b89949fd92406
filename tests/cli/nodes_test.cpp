// dptrain's launcher over two machines (--nnodes 2, two launchers of two ranks each): a node that
// never starts is named, and a node that dies ends the other within the timeout, leaving no
// process and no empty run folder. Node 0 alone runs on this machine's loopback; two nodes run on
// test hosts (support/test_hosts.h), since a node other than 0 refuses a loopback master.
#include "support/catch.h"

#include <signal.h>

#include <chrono>
#include <thread>

#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"
#include "support/test_hosts.h"

using namespace dptrain::testing;

namespace {

std::vector<std::string> node(const TempDir& dir, int node_rank, int port,
                              const std::filesystem::path& out,
                              const std::string& master = "127.0.0.1") {
  std::vector<std::string> args = {"train",
                                   "--nnodes",
                                   "2",
                                   "--node-rank",
                                   std::to_string(node_rank),
                                   "--master-addr",
                                   master,
                                   "--master-port",
                                   std::to_string(port),
                                   "--output",
                                   out.string()};
  for (const std::string& setting :
       {"data.dir=" + (dir / "data").string(), std::string("data.batch_size=40"),
        std::string("train.epochs=50"), std::string("runtime.threads=1"),
        std::string("parallel.backend=ddp"), std::string("parallel.devices=[\"cpu\",\"cpu\"]"),
        std::string("parallel.timeout_s=5"), std::string("log.every_steps=1")}) {
    args.insert(args.end(), {"--set", setting});
  }
  return args;
}

}  // namespace

TEST_CASE("a node that never starts is named, and its run leaves no empty folder",
          "[cli][ddp][nodes][timed]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  const auto out = dir / "run";
  const auto started = std::chrono::steady_clock::now();
  const auto result = run_dptrain(shell_words(node(dir, 0, free_port(), out)), {}, kJobSecretEnv);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(result.err);
  CHECK(result.status == 8);
  CHECK_THAT(result.err, ContainsSubstring("ddp: ranks 2 and 3 (node 1) never reached the "
                                           "rendezvous"));
  CHECK_THAT(result.err, ContainsSubstring("ranks 2 and 3 never arrived"));
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK(seconds < 60);
}

TEST_CASE(
    "a node whose launcher is killed ends the other node within the timeout, leaving no "
    "process",
    "[cli][ddp][nodes][timed]") {
  if (const auto why = TestHosts::unavailable()) DPTRAIN_SKIP(*why);
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  const TestHosts hosts(2, TestHosts::Naming::kCluster);
  const int port = 29532;
  BackgroundRun node0(node(dir, 0, port, dir / "run", "host0"), kJobSecretEnv, hosts.on(0));
  BackgroundRun node1(node(dir, 1, port, dir / "run1", "host0"), kJobSecretEnv, hosts.on(1));
  REQUIRE(node0.wait_for_stderr("epoch 1 batch 3/10", 90));
  const std::vector<int> pids1 = started_rank_pids(node1.stderr_text());
  REQUIRE(pids1.size() == 2);
  const auto killed = std::chrono::steady_clock::now();
  node1.signal(SIGKILL);
  const auto result = node0.finish(/*timeout_s=*/5 + 10);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  INFO(result.err);
  CHECK(result.status == 8);
  CHECK(seconds < 15);
  for (const int pid : started_rank_pids(result.err)) CHECK_FALSE(process_alive(pid));
  // Node 1's ranks die with their launcher.
  for (const int pid : pids1) CHECK(process_ends(pid, /*timeout_s=*/5));
}

TEST_CASE(
    "machines share a job secret: without one --nnodes is refused, and a node with another is "
    "turned away by the store and named",
    "[cli][ddp][nodes][security][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 400, 40);
  const int port = free_port();
  const auto none = run_dptrain(shell_words(node(dir, 1, port, dir / "none")));
  CHECK(none.status == 8);
  CHECK_THAT(none.err, ContainsSubstring("node 1: the ranks of a job across machines must share a "
                                         "secret to reach its rendezvous store, and "
                                         "DPTRAIN_JOB_SECRET is not set"));
  CHECK_THAT(none.err, ContainsSubstring("hint: export DPTRAIN_JOB_SECRET="));
  const auto too_short =
      run_dptrain(shell_words(node(dir, 1, port, dir / "short")), {}, {"DPTRAIN_JOB_SECRET=abc"});
  CHECK(too_short.status == 8);
  CHECK_THAT(too_short.err, ContainsSubstring("DPTRAIN_JOB_SECRET holds 3 characters, too few to "
                                              "be a secret (at least 16)"));

  // Node 1 with a secret of its own: node 0's store refuses its ranks, which give up after the
  // timeout saying so, and node 0 names them as never arrived.
  if (const auto why = TestHosts::unavailable()) DPTRAIN_SKIP(*why);
  const TestHosts hosts(2, TestHosts::Naming::kCluster);
  BackgroundRun node0(node(dir, 0, port, dir / "run", "host0"), kJobSecretEnv, hosts.on(0));
  BackgroundRun node1(node(dir, 1, port, dir / "run1", "host0"),
                      {"DPTRAIN_JOB_SECRET=ffffffffffffffffffffffffffffffff"}, hosts.on(1));
  const auto stranger = node1.finish(/*timeout_s=*/30);
  const auto host = node0.finish(/*timeout_s=*/30);
  CHECK(stranger.status == 8);
  CHECK_THAT(stranger.err, ContainsSubstring("does not hold this rank's job secret"));
  CHECK(host.status == 8);
  CHECK_THAT(host.err,
             ContainsSubstring("ddp: ranks 2 and 3 (node 1) never reached the rendezvous"));
}
