// Training over slow links through the real binary: parallel.grad_compression "none" is today's
// ddp bit for bit, fp16 and bf16 stay close to it, local SGD with a period of 1 is ddp's step, and
// every setting (PowerSGD, local SGD on 2 and 3 ranks) resumes mid-run exactly as it would have
// gone on; settings that cannot combine are refused naming their keys.
#include "support/catch.h"

#include <map>

#include "support/fixtures.h"
#include "support/runs.h"

#include "core/fs.h"
#include "run/checkpoint_format.h"
#include "serialize/zip_reader.h"

using namespace dptrain::testing;

namespace {

// support/runs.h's momentum-SGD run (two epochs, state a checkpoint must carry) on 600 images in
// batches of 60, which 2 and 3 ranks split: 10 steps an epoch, over `ranks` ddp ranks.
std::vector<std::string> slow_link_job(const TempDir& dir, const std::filesystem::path& out,
                                       int ranks, const std::vector<std::string>& extra) {
  std::string devices = "[\"cpu\"";
  for (int r = 1; r < ranks; ++r) devices += ",\"cpu\"";
  std::vector<std::string> settings = {"--set", "data.batch_size=60",
                                       "--set", "parallel.backend=ddp",
                                       "--set", "parallel.devices=" + devices + "]"};
  settings.insert(settings.end(), extra.begin(), extra.end());
  return momentum_sgd_job(dir / "data", settings, out);
}

// Runs `job` into `dir / name`; its final parameters.
std::vector<torch::Tensor> train_slow_link(const TempDir& dir, const std::string& name, int ranks,
                                           const std::vector<std::string>& extra) {
  const auto run = run_dptrain(shell_words(slow_link_job(dir, dir / name, ranks, extra)));
  INFO(name << ": " << run.err);
  REQUIRE(run.status == 0);
  return load_parameters(dir / name / "model.pt");
}

// Every file under `folder` and its bytes, every folder by name: what a refused resume must leave.
std::map<std::string, std::string> folder_bytes(const std::filesystem::path& folder) {
  std::map<std::string, std::string> all;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    const std::string name = std::filesystem::relative(entry.path(), folder).string();
    all[name] = entry.is_directory() ? "(a folder)" : read_bytes(entry.path());
  }
  return all;
}

std::vector<std::string> joined_args(std::vector<std::string> a,
                                     const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A run of `setting` with a checkpoint every 3 steps, and runs resumed from two of them, `cuts`:
// each must end where the whole run ended, bit for bit.
void check_resumes_exactly(const TempDir& dir, const std::string& name, int ranks,
                           const std::vector<std::string>& setting,
                           const std::vector<std::string>& cuts) {
  const auto whole = train_slow_link(dir, name, ranks,
                                     joined_args(setting, {"--set", "checkpoint.every_steps=3",
                                                           "--set", "checkpoint.keep_last=0"}));
  for (const auto& cut : cuts) {
    INFO(name << " resumed from " << cut);
    const auto checkpoint = dir / name / "checkpoints" / cut;
    REQUIRE(std::filesystem::exists(checkpoint));
    const auto resumed = train_slow_link(dir, name + "-from-" + cut, ranks,
                                         joined_args(setting, {"--resume", checkpoint.string()}));
    CHECK(max_relative_difference(resumed, whole) == 0);
  }
}

// Steps 9 and 18 of the run: inside a local SGD period of 8 after 2 warm-up steps (averagings
// after steps 3, 11, 19) and after PowerSGD's warm-up of 4.
const std::vector<std::string> kCuts = {"epoch-0000-batch-000009.pt", "epoch-0001-batch-000008.pt"};

// The bound docs/backends.md states, on the parameters after three steps relative to each
// tensor's largest: four units of rounding (2^-11 for fp16, 2^-8 for bf16). Measured here: 4.5e-4
// and 4.8e-3.
constexpr double kFp16Bound = 4.0 / 2048;
constexpr double kBf16Bound = 4.0 / 256;

}  // namespace

TEST_CASE("grad_compression none is today's ddp bit for bit, and fp16 and bf16 round the steps",
          "[cli][slow_links][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto today = train_slow_link(dir, "today", 2, {});
  const auto none = train_slow_link(dir, "none", 2, {"--set", "parallel.grad_compression=none"});
  CHECK(max_relative_difference(none, today) == 0);
  // Three steps: each mean gradient rounded to 11 significant bits (fp16) or 8 (bf16), twice
  // (the cast, the sum). Momentum SGD at this rate is chaotic: over the whole run the difference
  // grows as any perturbation of the first steps would (it does for a change of rank count too).
  const std::vector<std::string> three = {"--set", "train.max_steps=3"};
  const auto exact = train_slow_link(dir, "none-3", 2, three);
  const auto fp16 = train_slow_link(
      dir, "fp16", 2, joined_args(three, {"--set", "parallel.grad_compression=fp16"}));
  const auto bf16 = train_slow_link(
      dir, "bf16", 2, joined_args(three, {"--set", "parallel.grad_compression=bf16"}));
  const double fp16_off = max_relative_difference(fp16, exact);
  const double bf16_off = max_relative_difference(bf16, exact);
  CHECK(fp16_off > 0);
  CHECK(fp16_off < kFp16Bound);
  CHECK(bf16_off > fp16_off);
  CHECK(bf16_off < kBf16Bound);
  // LeNet's 129,068 float gradients, laid out with 40 elements of gaps: 516,432 bytes a step,
  // half as fp16 or bf16; a few bytes more for the preemption votes and the epoch's sums.
  for (const auto& [run, bytes] :
       {std::pair{"none-3", 516432}, {"fp16", 258216}, {"bf16", 258216}}) {
    INFO(run);
    const auto m = metrics_of(dir / run).at(0);
    CHECK(m.at("comm_bytes").get<int64_t>() >= 3 * bytes);
    CHECK(m.at("comm_bytes").get<int64_t>() <= 3 * bytes + 64);
  }
}

TEST_CASE("local SGD averaging every step takes ddp's steps, to rounding",
          "[cli][slow_links][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  // Plain SGD: with momentum, each rank's own buffer would make the two differ by design.
  const std::vector<std::string> sgd = {"--set", "optimizer.momentum=0"};
  const auto ddp = train_slow_link(dir, "ddp", 2, sgd);
  const auto local =
      train_slow_link(dir, "local", 2, joined_args(sgd, {"--set", "parallel.local_sgd=1"}));
  const double off = max_relative_difference(local, ddp);
  CHECK(off > 0);  // averaged parameters, not averaged gradients: other roundings
  CHECK(off < 1e-5);
  // Every step averages the parameters: the same bytes as the gradients' all-reduce, less the
  // buckets' 40 elements of gaps.
  const auto m = metrics_of(dir / "local").at(0);
  CHECK(m.at("comm_bytes").get<int64_t>() >= 10 * 516272);
  CHECK(m.at("comm_bytes").get<int64_t>() <= 10 * 516272 + 64);
}

TEST_CASE(
    "local SGD every 8 steps on 2 and 3 ranks sends no gradients, evaluates averaged "
    "parameters and resumes exactly",
    "[cli][slow_links][resume][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  // Averagings after steps 3, 11 and 19; steps 9 and 18 are inside periods.
  const std::vector<std::string> local = {"--set", "parallel.local_sgd=8", "--set",
                                          "parallel.local_sgd_warmup_steps=2"};
  check_resumes_exactly(dir, "local-2", 2, local, kCuts);
  check_resumes_exactly(dir, "local-3", 3, local, kCuts);
  // Epoch 2's 10 steps send no gradient: averagings after steps 11 and 19 of the run (the one
  // before evaluation comes after the training pass), and the checkpoints after steps 12, 15 and
  // 18 gather each rank's parameters and momentum: 8 times LeNet's 129,068 floats.
  const auto m = metrics_of(dir / "local-3").at(1);
  CHECK(m.at("comm_bytes").get<int64_t>() >= 8 * 516272);
  CHECK(m.at("comm_bytes").get<int64_t>() <= 8 * 516272 + 128);
  // The first epoch ends after step 10, inside a period: its evaluation averaged the parameters,
  // and its checkpoint holds equal parameters on every rank (the momentum differs); step 9's does
  // not.
  // Each row is a record of its own: LeNet's 129,068 parameters, then 129,068 of momentum.
  const auto params_of_rows = [&](const char* name) {
    const std::string bytes = dptrain::core::read_text_file(dir / "local-3" / "checkpoints" / name);
    const dptrain::serialize::ZipReader archive(bytes);
    std::vector<torch::Tensor> rows;
    for (int r = 0; r < 3; ++r) {
      REQUIRE(archive.size_of(dptrain::run::rank_state_record(r)) == 2 * 129068 * 4);
      torch::Tensor row = torch::empty({2 * 129068});
      archive.read_record(dptrain::run::rank_state_record(r), static_cast<char*>(row.data_ptr()));
      rows.push_back(row.narrow(0, 0, 129068));
    }
    CHECK_FALSE(archive.has(dptrain::run::rank_state_record(3)));
    return rows;
  };
  const auto evaluated = params_of_rows("epoch-0001.pt");
  CHECK(torch::equal(evaluated[0], evaluated[1]));
  CHECK(torch::equal(evaluated[0], evaluated[2]));
  const auto apart = params_of_rows("epoch-0000-batch-000009.pt");
  CHECK_FALSE(torch::equal(apart[0], apart[1]));
}

TEST_CASE(
    "PowerSGD at ranks 1 to 4, fp16 with accumulated micro-batches and bf16 resume mid-run "
    "exactly, and PowerSGD under ZeRO stage 1 takes stage 0's steps",
    "[cli][slow_links][resume][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const auto powersgd = [](int rank) {
    return std::vector<std::string>{"--set", "parallel.grad_compression=powersgd",
                                    "--set", "parallel.powersgd_rank=" + std::to_string(rank),
                                    "--set", "parallel.powersgd_start_step=4"};
  };
  for (const int rank : {1, 2, 3, 4}) {
    check_resumes_exactly(dir, "powersgd-" + std::to_string(rank), 2, powersgd(rank), kCuts);
  }
  // Two micro-batches a step, 5 steps an epoch: the checkpoints after steps 3 and 9 are 6 and 8
  // batches into their epochs.
  check_resumes_exactly(
      dir, "fp16-accumulated", 2,
      {"--set", "parallel.grad_compression=fp16", "--set", "train.accumulate_grad_batches=2"},
      {"epoch-0000-batch-000006.pt", "epoch-0001-batch-000008.pt"});
  check_resumes_exactly(dir, "bf16", 3, {"--set", "parallel.grad_compression=bf16"}, kCuts);
  // Stage 1 reduces the same buckets, then steps each rank's shard of the same means.
  const auto stage1 = train_slow_link(dir, "powersgd-2-zero1", 2,
                                      joined_args(powersgd(2), {"--set", "parallel.zero_stage=1"}));
  CHECK(max_relative_difference(stage1, load_parameters(dir / "powersgd-2" / "model.pt")) == 0);
}

TEST_CASE(
    "each rank's state in a checkpoint needs the settings and ranks that wrote it, and other "
    "runs and evaluate read the rest",
    "[cli][slow_links][resume][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 600, 60);
  const std::vector<std::string> local = {"--set", "parallel.local_sgd=4",
                                          "--set", "checkpoint.every_steps=3",
                                          "--set", "checkpoint.keep_last=0"};
  train_slow_link(dir, "local-3", 3, local);
  const auto checkpoint = (dir / "local-3" / "checkpoints" / "epoch-0000-batch-000006.pt").string();
  const auto resume = [&](const std::string& name, int ranks,
                          const std::vector<std::string>& extra) {
    return run_dptrain(shell_words(
        slow_link_job(dir, dir / name, ranks, joined_args(extra, {"--resume", checkpoint}))));
  };
  const auto resume_from = [&](const std::string& file) {
    return run_dptrain(
        shell_words(slow_link_job(dir, dir / (std::filesystem::path(file).stem().string() + "-run"),
                                  3, joined_args(local, {"--resume", file}))));
  };
  const auto two = resume("on-2", 2, local);
  CHECK(two.status == 3);
  CHECK_THAT(two.err, ContainsSubstring("the checkpoint holds the own state of 3 ranks (local "
                                        "SGD or PowerSGD), and this job has 2") &&
                          ContainsSubstring("resume on 3 ranks"));
  const auto powersgd = resume("powersgd", 3, {"--set", "parallel.grad_compression=powersgd"});
  CHECK(powersgd.status == 3);
  CHECK_THAT(powersgd.err,
             ContainsSubstring("holds each rank's local SGD state, and this run uses PowerSGD"));
  // Another optimizer cannot go on from this one's state (momentum here): a config error.
  const auto adam =
      resume("adam", 3,
             joined_args(local, {"--set", "optimizer.name=adam", "--set", "optimizer.momentum=0"}));
  CHECK(adam.status == 3);
  CHECK_THAT(adam.err, ContainsSubstring("the checkpoint holds the state of optimizer \"sgd\", "
                                         "and this run's optimizer.name is \"adam\"") &&
                           ContainsSubstring("hint: resume with optimizer.name \"sgd\""));
  // Plain ddp goes on from rank 0's parameters and momentum, and says so.
  const auto plain = resume("plain", 3, {});
  CHECK(plain.status == 0);
  CHECK_THAT(plain.err, ContainsSubstring("which this run does not use: every rank goes on from "
                                          "rank 0's"));
  const auto evaluated = run_dptrain(shell_words({"evaluate", "--model", checkpoint}));
  INFO(evaluated.err);
  CHECK(evaluated.status == 0);

  // Rank 1's record rewritten (with a fresh checksum) holding a nan, then one value short: the
  // file is refused, naming it.
  const auto rewritten = [&](const std::string& name, const std::string& bytes) {
    const auto path = (dir / name).string();
    const std::string script =
        "import sys, zipfile\n"
        "src, dst, row = sys.argv[1], sys.argv[2], 'archive/rank_states/1'\n"
        "with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, 'w') as b:\n"
        "    for e in a.infolist():\n"
        "        data = a.read(e)\n"
        "        if e.filename == row: data = " +
        bytes +
        "\n"
        "        b.writestr(e, data)\n";
    const auto made =
        run_program("/usr/bin/python3", shell_words({"-c", script, checkpoint, path}));
    INFO(made.err);
    REQUIRE(made.status == 0);
    return path;
  };
  const auto with_nan = resume_from(rewritten("nan.pt", "b'\\x00\\x00\\xc0\\x7f' + data[4:]"));
  CHECK(with_nan.status == 5);
  CHECK_THAT(with_nan.err,
             ContainsSubstring("nan.pt: rank 1's own state in the checkpoint holds inf or nan"));
  const auto short_row = resume_from(rewritten("short.pt", "data[:-4]"));
  CHECK(short_row.status == 5);
  CHECK_THAT(short_row.err,
             ContainsSubstring("short.pt: a damaged checkpoint: record rank_states/1 holds"));
  // The same nan in the finished run's own folder, resumed there (a rewind): rank 1 refuses its
  // row, and rank 0 has moved nothing aside, cut nothing, marked nothing before every rank began.
  std::filesystem::copy_file(dir / "nan.pt",
                             dir / "local-3" / "checkpoints" / "epoch-0000-batch-000006.pt",
                             std::filesystem::copy_options::overwrite_existing);
  const auto before = folder_bytes(dir / "local-3");
  const auto rewind = run_dptrain(shell_words(slow_link_job(
      dir, dir / "local-3", 3,
      joined_args(local,
                  {"--resume",
                   (dir / "local-3" / "checkpoints" / "epoch-0000-batch-000006.pt").string()}))));
  CHECK(rewind.status == 5);
  CHECK_THAT(rewind.err,
             ContainsSubstring("rank 1's own state in the checkpoint holds inf or nan"));
  CHECK(folder_bytes(dir / "local-3") == before);

  // PowerSGD's rows are laid out by its settings: another rank, or another bucket size (which
  // keeps a row's length and moves what it holds), is refused by name.
  const std::vector<std::string> rank1 = {"--set", "parallel.grad_compression=powersgd",
                                          "--set", "checkpoint.every_steps=3",
                                          "--set", "checkpoint.keep_last=0",
                                          "--set", "parallel.bucket_mb=0.1"};
  train_slow_link(dir, "powersgd-1", 2, rank1);
  const auto powersgd_resume = [&](const std::string& name, const std::string& setting) {
    return run_dptrain(shell_words(slow_link_job(
        dir, dir / name, 2,
        joined_args(
            rank1,
            {"--set", setting, "--resume",
             (dir / "powersgd-1" / "checkpoints" / "epoch-0000-batch-000006.pt").string()}))));
  };
  const auto wider = powersgd_resume("powersgd-2", "parallel.powersgd_rank=2");
  CHECK(wider.status == 3);
  CHECK_THAT(wider.err, ContainsSubstring("parallel.powersgd_rank was 1 and is now 2: the "
                                          "checkpoint's PowerSGD state is laid out by it") &&
                            ContainsSubstring("parallel.powersgd_*"));
  const auto rebucketed = powersgd_resume("powersgd-bucket", "parallel.bucket_mb=0.2");
  CHECK(rebucketed.status == 3);
  CHECK_THAT(rebucketed.err, ContainsSubstring("parallel.bucket_mb was 0.1 and is now 0.2: the "
                                               "checkpoint's PowerSGD state is laid out by it") &&
                                 ContainsSubstring("parallel.bucket_mb"));
}

TEST_CASE("settings that cannot combine are refused, naming both keys", "[cli][slow_links]") {
  const std::string ddp = "train --set parallel.backend=ddp ";
  const auto dp =
      run_dptrain("train --set parallel.backend=dp --set parallel.grad_compression=fp16");
  CHECK(dp.status == 3);
  CHECK_THAT(dp.err, ContainsSubstring("parallel.grad_compression: changes how ddp's ranks "
                                       "exchange gradients; parallel.backend is \"dp\""));
  const auto both =
      run_dptrain(ddp + "--set parallel.grad_compression=powersgd --set parallel.local_sgd=8");
  CHECK(both.status == 3);
  CHECK_THAT(both.err,
             ContainsSubstring("parallel.local_sgd: and parallel.grad_compression \"powersgd\" "
                               "both set") &&
                 ContainsSubstring("choose one"));
  const auto zero2 =
      run_dptrain(ddp + "--set parallel.grad_compression=bf16 --set parallel.zero_stage=2");
  CHECK(zero2.status == 3);
  CHECK_THAT(zero2.err, ContainsSubstring("parallel.grad_compression: cannot compress "
                                          "parallel.zero_stage 2's gradients"));
  const auto zero1 = run_dptrain(ddp + "--set parallel.local_sgd=4 --set parallel.zero_stage=1");
  CHECK(zero1.status == 3);
  CHECK_THAT(zero1.err, ContainsSubstring("parallel.local_sgd: keeps each rank's optimizer state "
                                          "whole and its own, which parallel.zero_stage 1"));
  const auto fp16 = run_dptrain(ddp + "--set parallel.local_sgd=4 --set precision=fp16");
  CHECK(fp16.status == 3);
  CHECK_THAT(fp16.err, ContainsSubstring("parallel.local_sgd: with precision \"fp16\""));
  const auto scaled =
      run_dptrain(ddp + "--set parallel.grad_compression=powersgd --set precision=fp16");
  CHECK(scaled.status == 3);
  CHECK_THAT(scaled.err, ContainsSubstring("parallel.grad_compression: \"powersgd\" with "
                                           "precision \"fp16\""));
}
