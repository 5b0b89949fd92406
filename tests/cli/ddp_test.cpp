// ddp as users run it: real rank processes talking over Gloo on this machine, started by dptrain
// itself or, as torchrun would, by a parent that sets RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT.
#include "support/catch.h"

#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "core/fs.h"
#include "distributed/communicator.h"
#include "model/lenet.h"
#include "model/state_dict.h"
#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"
#include "support/sockets.h"

using namespace dptrain::testing;

namespace {

// 600 training images in global batches of 60 (20 per rank for 3 ranks, 30 for 2): 10 steps an
// epoch, no padding, so every rank count sees the same global batches.
struct DdpData {
  TempDir dir;
  DdpData() { write_tiny_dataset(dir / "data", 600, 90); }
  std::vector<std::string> sets(int epochs) const {
    return {"--set", "data.dir=" + (dir / "data").string(),
            "--set", "data.batch_size=60",
            "--set", "train.epochs=" + std::to_string(epochs),
            "--set", "model.init_std=0.1",
            "--set", "runtime.threads=1",
            "--set", "parallel.timeout_s=60"};
  }
  // dptrain's command line: train, these settings, then `more` (--set pairs), --output `out`.
  std::vector<std::string> command(int epochs, const std::vector<std::string>& more,
                                   const std::filesystem::path& out) const {
    std::vector<std::string> argv = {"train"};
    for (const auto& a : sets(epochs)) argv.push_back(a);
    argv.insert(argv.end(), more.begin(), more.end());
    argv.push_back("--output");
    argv.push_back(out.string());
    return argv;
  }
  std::string args(int epochs) const {
    std::string joined;
    for (const auto& a : sets(epochs)) joined += (joined.empty() ? "" : " ") + a;
    return joined;
  }
};

// The single-device run that ddp must reproduce.
std::filesystem::path train_single(const DdpData& data, const TempDir& dir) {
  const auto out = dir / "single";
  const auto result =
      run_dptrain("train " + data.args(2) + " --set parallel.devices=cpu --output " + out.string());
  REQUIRE(result.status == 0);
  return out;
}

// Two local CPU ranks started by dptrain, logging every step, for far longer than a test waits.
std::vector<std::string> long_local_job(const DdpData& data, const std::filesystem::path& out) {
  return data.command(1000,
                      {"--set", "parallel.backend=ddp", "--set",
                       "parallel.devices=[\"cpu\",\"cpu\"]", "--set", "log.every_steps=1"},
                      out);
}

int pid_of_rank(const std::string& log, int rank) {
  const std::vector<int> pids = started_rank_pids(log, rank);
  REQUIRE(pids.size() == 1);
  return pids.front();
}

std::vector<std::string> torchrun_env(int rank, int world, int port) {
  return {"RANK=" + std::to_string(rank),
          "WORLD_SIZE=" + std::to_string(world),
          "LOCAL_RANK=" + std::to_string(rank),
          "LOCAL_WORLD_SIZE=" + std::to_string(world),
          "MASTER_ADDR=127.0.0.1",
          "MASTER_PORT=" + std::to_string(port)};
}

}  // namespace

TEST_CASE("with drop_last, ddp trains on exactly single's full batches, no padded repeats",
          "[cli][ddp]") {
  // 599 images in batches of 60: one device trains 9 full batches (540 samples). Padded to 600
  // for 2 ranks, the shards would hold a 10th batch with a repeated sample.
  TempDir dir;
  write_tiny_dataset(dir / "data", 599, 90);
  const std::string common = "train --set data.dir=" + (dir / "data").string() +
                             " --set data.batch_size=60 --set data.drop_last=true"
                             " --set train.epochs=1 --set model.init_std=0.1"
                             " --set runtime.threads=1 --set parallel.timeout_s=60";
  const auto single = dir / "single";
  const auto ddp = dir / "ddp";
  REQUIRE(run_dptrain(common + " --set parallel.devices=cpu --output " + single.string()).status ==
          0);
  REQUIRE(run_dptrain(common +
                      " --set parallel.backend=ddp --set parallel.devices='[\"cpu\",\"cpu\"]'"
                      " --output " +
                      ddp.string())
              .status == 0);
  for (const auto& out : {single, ddp}) {
    INFO(out.string());
    const auto record = nlohmann::json::parse(dptrain::core::read_text_file(out / "metrics.jsonl"));
    CHECK(record.at("train_samples") == 540);
  }
  CHECK(max_relative_difference(load_parameters(ddp / "model.pt"),
                                load_parameters(single / "model.pt")) <= 1e-5);
}

TEST_CASE("ddp over 3 local CPU ranks gives single-device training's parameters", "[cli][ddp]") {
  DdpData data;
  TempDir dir;
  const auto single = train_single(data, dir);
  const auto out = dir / "ddp";
  // Buckets of 50 KB: LeNet's gradients go in several all-reduces.
  const auto result = run_dptrain("train " + data.args(2) +
                                  " --set parallel.backend=ddp"
                                  " --set parallel.devices='[\"cpu\",\"cpu\",\"cpu\"]'"
                                  " --set parallel.bucket_mb=0.05 --output " +
                                  out.string());
  REQUIRE(result.status == 0);
  CHECK(max_relative_difference(load_parameters(out / "model.pt"),
                                load_parameters(single / "model.pt")) <= 1e-5);
  const auto ddp = summary_of(out);
  const auto one = summary_of(single);
  CHECK(ddp.at("devices") == nlohmann::json::array({"cpu", "cpu", "cpu"}));
  CHECK(ddp.at("world_size") == 3);
  CHECK(ddp.at("test_acc") == one.at("test_acc"));  // sharded evaluation counts every sample once
  CHECK(ddp.at("train_loss").get<double>() ==
        Approx(one.at("train_loss").get<double>()).epsilon(1e-5));
  CHECK_THAT(result.out, Catch::Matchers::EndsWith("sec/epoch on [cpu, cpu, cpu]\n"));
  // Rank 0 alone writes: one metrics line per epoch.
  CHECK(dptrain::core::read_text_file(out / "metrics.jsonl").find("\"epoch\":2") !=
        std::string::npos);
}

TEST_CASE("ddp over 2 ranks started as torchrun starts them gives single's parameters",
          "[cli][ddp]") {
  DdpData data;
  TempDir dir;
  const auto single = train_single(data, dir);
  const auto out = dir / "ddp";
  const int port = free_port();
  const auto args =
      data.command(2, {"--set", "parallel.backend=ddp", "--set", "parallel.devices=cpu"}, out);
  BackgroundRun rank1(args, torchrun_env(1, 2, port));
  BackgroundRun rank0(args, torchrun_env(0, 2, port));
  const auto r0 = rank0.finish(120);
  const auto r1 = rank1.finish(30);
  INFO(r0.err << r1.err);
  REQUIRE(r0.status == 0);
  REQUIRE(r1.status == 0);
  CHECK(max_relative_difference(load_parameters(out / "model.pt"),
                                load_parameters(single / "model.pt")) <= 1e-5);
  CHECK(r1.out.empty());  // only rank 0 prints epoch lines
  CHECK(r1.err.empty());  // and later ranks log only warnings and errors
  CHECK_THAT(r0.err, ContainsSubstring("rank 0 of 2 (node 0, local rank 0) from torchrun on cpu"));
}

TEST_CASE("a local rank killed mid-training stops the job, naming the rank, no orphans",
          "[cli][ddp]") {
  DdpData data;
  TempDir dir;
  BackgroundRun run(long_local_job(data, dir / "out"));
  REQUIRE(run.wait_for_stderr("epoch 1 batch 3/10", 60));
  const int rank0 = pid_of_rank(run.stderr_text(), 0);
  const int rank1 = pid_of_rank(run.stderr_text(), 1);
  ::kill(rank1, SIGKILL);
  const auto result = run.finish(60);
  INFO(result.err);
  CHECK(result.status == 128 + SIGKILL);
  CHECK_THAT(result.err, ContainsSubstring("ddp: rank 1 of 2 (pid " + std::to_string(rank1) +
                                           ") was killed by signal 9 (Killed); the other ranks "
                                           "were stopped"));
  CHECK_FALSE(process_alive(rank0));
}

TEST_CASE("under torchrun, a rank whose peer died fails within the timeout, naming itself",
          "[cli][ddp]") {
  DdpData data;
  TempDir dir;
  const int port = free_port();
  const auto args = data.command(1000,
                                 {"--set", "parallel.backend=ddp", "--set", "parallel.devices=cpu",
                                  "--set", "parallel.timeout_s=20", "--set", "log.every_steps=1"},
                                 dir / "out");
  BackgroundRun rank0(args, torchrun_env(0, 2, port));
  BackgroundRun rank1(args, torchrun_env(1, 2, port));
  REQUIRE(rank0.wait_for_stderr("epoch 1 batch 3/10", 60));
  rank1.signal(SIGKILL);
  const auto result = rank0.finish(25);
  INFO(result.err);
  CHECK(result.status == 8);
  CHECK_THAT(result.err,
             Catch::Matchers::Matches(R"((.|\n)*distributed error: rank 0: the all-reduce of )"
                                      R"([^\n]* failed: (.|\n)*)"));
}

TEST_CASE(
    "a ddp job on one machine listens on the loopback alone, started by dptrain or as torchrun "
    "starts it",
    "[cli][ddp][security]") {
  DdpData data;
  TempDir dir;
  // Every process's listening sockets once training is under way.
  const auto listeners = [](const std::vector<int>& pids) {
    std::vector<std::string> all;
    for (const int pid : pids) {
      for (const auto& a : listening_addresses(pid)) all.push_back(a);
    }
    return all;
  };
  SECTION("dptrain's launcher") {
    BackgroundRun run(long_local_job(data, dir / "out"));
    REQUIRE(run.wait_for_stderr("epoch 1 batch 2/", 60));
    std::vector<int> pids = started_rank_pids(run.stderr_text());
    REQUIRE(pids.size() == 2);
    pids.push_back(run.pid());
    const std::vector<std::string> addresses = listeners(pids);
    INFO(addresses.size() << " listening");
    for (const auto& a : addresses) INFO(a);
    CHECK_FALSE(addresses.empty());  // the store (Gloo closes its listeners once connected)
    for (const auto& a : addresses) CHECK(is_loopback(a));
  }
  SECTION("ranks started with torchrun's variables, rank 0 serving the store") {
    const int port = free_port();
    const auto job = data.command(
        1000, {"--set", "parallel.backend=ddp", "--set", "log.every_steps=1"}, dir / "torchrun");
    BackgroundRun rank0(job, torchrun_env(0, 2, port));
    BackgroundRun rank1(job, torchrun_env(1, 2, port));
    REQUIRE(rank0.wait_for_stderr("epoch 1 batch 2/", 60));
    const std::vector<std::string> addresses = listeners({rank0.pid(), rank1.pid()});
    for (const auto& a : addresses) INFO(a);
    CHECK_FALSE(addresses.empty());
    for (const auto& a : addresses) CHECK(is_loopback(a));
  }
}

TEST_CASE(
    "ranks that do not hold rank 0's file at its path stop, naming the rank: another file there, "
    "or none",
    "[cli][ddp]") {
  if (::geteuid() != 0) DPTRAIN_SKIP("needs root, to give rank 1 a mount namespace of its own");
  // A chroot or a container may refuse one to root too (unshare cannot change the root's
  // propagation there).
  if (const auto probe = run_program("/usr/bin/unshare", "-m true"); probe.status != 0) {
    DPTRAIN_SKIP("this machine gives no mount namespace (unshare -m: " + probe.err + ")");
  }
  DdpData data;
  TempDir dir;
  std::filesystem::create_directories(dir / "models");
  const auto init = dir / "models" / "init.pt";
  // Two LeNets of different seeded weights, as Python's torch.save(net.state_dict()) keeps them.
  const auto save_lenet = [](uint64_t seed, const std::filesystem::path& path) {
    torch::manual_seed(seed);
    dptrain::model::LeNet net;
    dptrain::model::StateDict dict;
    for (const auto& p : net->named_parameters()) dict.emplace_back(p.key(), p.value().detach());
    dptrain::model::save_state_dict(path, dict);
  };
  save_lenet(1, init);
  save_lenet(2, dir / "other.pt");
  // Rank 1 runs as on a machine of its own: in a mount namespace where `init` is another file,
  // or where its folder is empty.
  for (const std::string& rank1_sees :
       {"mount --bind " + (dir / "other.pt").string() + " " + init.string(),
        "mount -t tmpfs none " + (dir / "models").string()}) {
    INFO(rank1_sees);
    const int port = free_port();
    const auto job = data.command(
        1, {"--set", "parallel.backend=ddp", "--init-from", init.string()}, dir / "out");
    BackgroundRun rank0(job, torchrun_env(0, 2, port));
    const auto rank1 =
        run_program("/usr/bin/unshare",
                    shell_words({"-m", "sh", "-c",
                                 rank1_sees + " && exec " + std::string(DPTRAIN_BINARY) + " " +
                                     shell_words(job)}),
                    {}, torchrun_env(1, 2, port));
    const auto first = rank0.finish(60);
    INFO(rank1.err);
    INFO(first.err);
    CHECK(rank1.status == 5);
    CHECK(first.status == 5);
    const std::string expected =
        rank1_sees.rfind("mount --bind", 0) == 0
            ? "rank 1 holds another " + init.string() +
                  " than rank 0 (the weights to start from; their SHA-256s differ)"
            : "rank 1 cannot read the weights to start from that rank 0 chose: " + init.string() +
                  ": cannot open for reading: No such file or directory";
    CHECK_THAT(first.err, ContainsSubstring(expected));
    CHECK_THAT(rank1.err, ContainsSubstring(expected));
    CHECK_FALSE(std::filesystem::exists(dir / "out"));  // a start that fails leaves no folder
  }
}

TEST_CASE("one machine's ranks meet on the loopback whatever --master-addr says", "[cli][ddp]") {
  DdpData data;
  TempDir dir;
  // 192.0.2.1 is a documentation address nothing answers at: the store listens on the loopback.
  auto args =
      data.command(1,
                   {"--set", "parallel.backend=ddp", "--set", "parallel.devices=[\"cpu\",\"cpu\"]",
                    "--nnodes", "1", "--master-addr", "192.0.2.1"},
                   dir / "out");
  const auto result = run_dptrain(shell_words(args));
  INFO(result.err);
  CHECK(result.status == 0);
  CHECK_THAT(result.err, ContainsSubstring("--master-addr 192.0.2.1 is not used: the ranks of one "
                                           "machine meet on the loopback"));
}

TEST_CASE("an unreachable rendezvous is a distributed error within the timeout", "[cli][ddp]") {
  DdpData data;
  const int port = free_port();
  const std::string args = "train " + data.args(1) +
                           " --set parallel.backend=ddp --set parallel.devices=cpu"
                           " --set parallel.timeout_s=2 --output /nonexistent/never-written";
  // On one machine rank 1 waits for rank 0 to publish where its store is.
  const auto alone = run_dptrain(args, {}, torchrun_env(1, 2, port));
  CHECK(alone.status == 8);
  CHECK_THAT(alone.err,
             ContainsSubstring("rank 1: could not reach the rendezvous store within 2 s: "
                               "/tmp/dptrain-"));
  CHECK_THAT(alone.err, ContainsSubstring("-" + std::to_string(port) +
                                          "-0: No such file or directory (rank 0 has not "
                                          "published the store)"));
  CHECK_THAT(alone.err, ContainsSubstring("hint: check MASTER_ADDR and MASTER_PORT"));
  // Across machines (one rank on this one) it looks for rank 0 at MASTER_ADDR:MASTER_PORT.
  std::vector<std::string> across = torchrun_env(1, 2, port);
  across.push_back("LOCAL_WORLD_SIZE=1");
  across.push_back("LOCAL_RANK=0");
  across.push_back("DPTRAIN_JOB_SECRET=0123456789abcdef0123456789abcdef");
  const auto far = run_dptrain(args, {}, across);
  CHECK(far.status == 8);
  CHECK_THAT(far.err, ContainsSubstring("rank 1: could not reach the rendezvous store at "
                                        "127.0.0.1:" +
                                        std::to_string(port) + " within 2 s: Connection refused"));
}

TEST_CASE("bad launcher variables and a batch that does not split are clear errors", "[cli][ddp]") {
  DdpData data;
  const auto zero = run_dptrain("train " + data.args(1) + " --set parallel.backend=ddp", {},
                                {"RANK=0", "WORLD_SIZE=0"});
  CHECK(zero.status == 8);
  CHECK_THAT(zero.err, ContainsSubstring(
                           "distributed error: torchrun: WORLD_SIZE=0 is out of range: must be 1"));

  const auto beyond = run_dptrain("train " + data.args(1) + " --set parallel.backend=ddp", {},
                                  {"RANK=2", "WORLD_SIZE=2", "MASTER_ADDR=x", "MASTER_PORT=1"});
  CHECK(beyond.status == 8);
  CHECK_THAT(beyond.err, ContainsSubstring("torchrun: RANK=2 is not below WORLD_SIZE=2"));

  const auto uneven = run_dptrain("train " + data.args(1) +
                                  " --set data.batch_size=256 --set parallel.backend=ddp"
                                  " --set parallel.devices='[\"cpu\",\"cpu\",\"cpu\"]'");
  CHECK(uneven.status == 3);
  CHECK_THAT(uneven.err,
             ContainsSubstring("config error: data.batch_size: 256 does not split evenly "
                               "over 3 ranks"));
  CHECK_THAT(uneven.err, ContainsSubstring("hint: use a multiple of 3, such as 255 or 258"));
  CHECK_THAT(uneven.err, !ContainsSubstring("started"));  // refused before any rank started

  const auto single_under_launcher =
      run_dptrain("train " + data.args(1) + " --set parallel.devices=cpu", {},
                  {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1"});
  CHECK(single_under_launcher.status == 3);
  CHECK_THAT(single_under_launcher.err,
             ContainsSubstring("parallel.backend: \"single\" trains in one process, but torchrun "
                               "started 2"));
}

TEST_CASE("Ctrl-C reaches every local rank once and the job exits 130", "[cli][ddp]") {
  DdpData data;
  TempDir dir;
  BackgroundRun run(long_local_job(data, dir / "out"));
  REQUIRE(run.wait_for_stderr("epoch 1 batch 3/10", 60));
  run.signal(SIGINT);
  const auto result = run.finish(30);
  CHECK(result.status == 130);
  CHECK_THAT(result.err, ContainsSubstring("interrupted: "));
  CHECK(std::filesystem::exists(dir / "out" / "config.json"));
}

TEST_CASE("a second Ctrl-C stops a ddp job at once and it exits 130 as a single process does",
          "[cli][ddp]") {
  DdpData data;
  TempDir dir;
  BackgroundRun run(long_local_job(data, dir / "out"));
  REQUIRE(run.wait_for_stderr("epoch 1 batch 3/10", 60));
  run.signal(SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  run.signal(SIGINT);
  const auto result = run.finish(30);
  INFO(result.err);
  CHECK(result.status == 130);  // was 137: the launcher's own SIGKILL, read as the rank's failure
}

TEST_CASE(
    "one Ctrl-C ends a ddp job whose rank is stopped within 10 s and the grace, exits 130 and "
    "names the rank it killed",
    "[cli][ddp]") {
  DdpData data;
  TempDir dir;
  BackgroundRun run(long_local_job(data, dir / "out"));
  REQUIRE(run.wait_for_stderr("epoch 1 batch 3/10", 60));
  const int rank1 = pid_of_rank(run.stderr_text(), 1);
  REQUIRE(::kill(rank1, SIGSTOP) == 0);
  run.signal(SIGINT);
  // Rank 0 waits for the stopped rank in its next collective, where it cannot act on the
  // Ctrl-C: they went on until parallel.timeout_s (60 s here) and the job exited 137, its
  // launcher's own kill read as a rank's failure. Now rank 0 ends itself 10 s on, and the
  // launcher kills rank 1 its grace (5 s) later.
  const auto result = run.finish(40);
  INFO(result.err);
  CHECK(result.status == 130);
  CHECK_THAT(result.err,
             ContainsSubstring("interrupted: Ctrl-C came while this rank waited for ") &&
                 ContainsSubstring("and 10 s later it still waits"));
  CHECK_THAT(result.err, ContainsSubstring("ddp: stopped on Ctrl-C; rank 1 did not stop, and was "
                                           "killed"));
}

TEST_CASE("ddp on cuda:0 (NCCL alone, Gloo with two ranks sharing it) gives single's parameters",
          "[cli][ddp][cuda]") {
  SKIP_WITHOUT_CUDA();
  DdpData data;
  TempDir dir;
  const auto single = dir / "single";
  REQUIRE(run_dptrain("train " + data.args(2) + " --set parallel.devices=cuda:0 --output " +
                      single.string())
              .status == 0);
  // cuDNN picks its kernels by batch shape, so per-rank batches need not sum in the same order
  // as the whole batch does: a looser bound than on the CPU.
  constexpr double kTolerance = 1e-4;
  struct Case {
    std::string name, devices, log;
  };
  // Two ranks on one GPU: `auto` must take Gloo (NCCL refuses them) and say why.
  std::vector<Case> cases = {{"auto", "[\"cuda:0\",\"cuda:0\"]",
                              "auto picks gloo: local ranks 0 and 1 share cuda:0, and NCCL "
                              "refuses two ranks on one GPU"}};
  if (dptrain::distributed::nccl_available()) {
    cases.push_back({"auto", "[\"cuda:0\"]", "auto picks nccl: each rank has a GPU of its own"});
  }
  for (const auto& [transport, devices, log] : cases) {
    INFO(transport << " over " << devices);
    const auto out = dir / ("ddp-" + std::to_string(devices.size()));
    const auto result =
        run_dptrain("train " + data.args(2) +
                    " --set parallel.backend=ddp --set parallel.dist_backend=" + transport +
                    " --set parallel.devices='" + devices + "' --output " + out.string());
    INFO(result.err);
    REQUIRE(result.status == 0);
    CHECK_THAT(result.err, ContainsSubstring(log));
    // Each rank's peak GPU memory: at least the model's float32 parameters and gradients.
    for (const auto peak : metrics_of(out).at(0).at("peak_gpu_bytes").get<std::vector<int64_t>>()) {
      CHECK(peak > 2 * 4 * 100000);
    }
    CHECK(max_relative_difference(load_parameters(out / "model.pt"),
                                  load_parameters(single / "model.pt")) <= kTolerance);
  }
}
