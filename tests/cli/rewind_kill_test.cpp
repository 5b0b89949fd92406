// A rewind killed (SIGKILL) at any point while it sets the old branch aside. Its record
// (run/rewind_record.h) is the one atomic step: killed before it is on disk, the folder is exactly
// as it was and the old branch goes on; killed at any later rename, or as the record goes,
// `--resume auto` finishes the move and goes on with the rewound branch, ending bit-equal to the
// same rewind left alone, with every file of the abandoned branch in one folder. The kills are
// strace's (`-e inject=...:signal=KILL:when=N`), which stop the process on its Nth rename's entry,
// before the rename happens.
#include "support/catch.h"

#include <algorithm>
#include <map>
#include <regex>

#include "core/fs.h"
#include "support/branches.h"
#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// dptrain under strace; the shell's status: 137 when strace's injection killed it.
ProcessResult run_traced(const std::vector<std::string>& strace_options,
                         const std::vector<std::string>& args) {
  std::vector<std::string> words = {"\"$0\" \"$@\"; exit $?", "strace", "-f", "-qq", "-s", "4096"};
  words.insert(words.end(), strace_options.begin(), strace_options.end());
  words.push_back(DPTRAIN_BINARY);
  words.insert(words.end(), args.begin(), args.end());
  return run_program("/bin/sh", "-c " + shell_words(words));
}

// One rename, and where strace's `when=` finds it: its count among that process's calls of the
// same system call (strace counts each call apart: rename for write_file_atomic's, renameat2
// for the moves).
struct Rename {
  std::string call, from, to;
  size_t nth_of_call = 0;
};

// The renames of the process that wrote the rewind's record, in order, from strace's log.
std::vector<Rename> renames_of_rewind(const std::string& log) {
  static const std::regex kLine(
      R"re(^(\d+) +(rename(?:at2?)?)\((?:AT_FDCWD, )?"([^"]*)", (?:AT_FDCWD, )?"([^"]*)")re");
  std::map<std::string, std::vector<Rename>> by_pid;
  std::string writer;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, kLine)) continue;
    auto& calls = by_pid[m[1]];
    const size_t nth = 1 + std::count_if(calls.begin(), calls.end(),
                                         [&](const Rename& r) { return r.call == m[2].str(); });
    calls.push_back({m[2], m[3], m[4], nth});
    if (std::filesystem::path(m[4].str()).filename() == "rewind.json") writer = m[1];
  }
  REQUIRE_FALSE(writer.empty());
  return by_pid[writer];
}

// A killed rewind's folder once --resume auto has gone on with it: the rewound branch's model
// and epochs, no record left, and the whole abandoned branch in one folder of each kind.
void check_rewound(const std::filesystem::path& run, const std::filesystem::path& original,
                   const std::vector<torch::Tensor>& reference,
                   const std::vector<double>& reference_losses) {
  CHECK_FALSE(std::filesystem::exists(run / "rewind.json"));
  CHECK(max_relative_difference(load_parameters(run / "model.pt"), reference) == 0);
  CHECK(train_losses(run) == reference_losses);
  const auto aside = folders_named_abandoned(run / "checkpoints");
  REQUIRE(aside.size() == 1);
  for (const char* name :
       {"epoch-0000-batch-000015.pt", "epoch-0001.pt", "epoch-0001-batch-000005.pt",
        "epoch-0001-batch-000010.pt", "epoch-0001-batch-000015.pt", "epoch-0002.pt"}) {
    CHECK(read_bytes(aside[0] / name) == read_bytes(original / "checkpoints" / name));
  }
  const auto results_aside = folders_named_abandoned(run);
  REQUIRE(results_aside.size() == 1);
  for (const char* name : {"model.pt", "summary.json"}) {
    CHECK(read_bytes(results_aside[0] / name) == read_bytes(original / name));
  }
}

}  // namespace

TEST_CASE(
    "a rewind killed at any rename while it sets the old branch aside goes on with the rewound "
    "branch under --resume auto once its record is written, and leaves the folder as it was "
    "before",
    "[cli][resume][rewind][slow]") {
  REQUIRE(run_program("/bin/sh", "-c 'command -v strace'").status == 0);  // scripts/setup.sh's
  TempDir dir;
  write_real_subset(dir / "data", 600, 60);
  const auto original = dir / "original";
  REQUIRE(run_dptrain(shell_words(branch_job(dir, original))).status == 0);
  const std::string back_to = "epoch-0000-batch-000010.pt";
  const auto fresh_copy = [&](const std::string& name) {
    const auto run = dir / name;
    std::filesystem::copy(original, run, std::filesystem::copy_options::recursive);
    return run;
  };

  // The rewind left alone, traced: the reference, and the renames a kill may come before.
  const auto whole = fresh_copy("whole");
  const auto log = dir / "renames.log";
  const auto traced = run_traced({"-o", log.string(), "-e", "trace=rename,renameat,renameat2"},
                                 rewind_of(dir, whole, (whole / "checkpoints" / back_to).string()));
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  const std::vector<Rename> renames = renames_of_rewind(dptrain::core::read_text_file(log));
  size_t record = 0, last_move = 0;
  for (size_t i = 0; i < renames.size(); ++i) {
    if (std::filesystem::path(renames[i].to).filename() == "rewind.json") record = i + 1;
    if (renames[i].to.find("/abandoned-") != std::string::npos) last_move = i + 1;
  }
  // The record first, then the 6 later checkpoints (steps 15 to 40) and the 2 results.
  REQUIRE(record > 0);
  REQUIRE(last_move == record + 8);
  CHECK_FALSE(std::filesystem::exists(whole / "rewind.json"));
  const auto reference = load_parameters(whole / "model.pt");
  const auto reference_losses = train_losses(whole);
  REQUIRE(reference_losses.size() == 2);
  CHECK(reference_losses != train_losses(original));  // another lr: another branch

  const auto before = folder_bytes(original);
  // Killed before each rename up to the last move, then as the record is removed (-P: the
  // unlinks of that file alone).
  for (size_t n = 1; n <= last_move + 1; ++n) {
    const bool at_removal = n > last_move;
    CAPTURE(n, at_removal);
    const auto run = fresh_copy("killed-" + std::to_string(n));
    const std::string calls = at_removal ? "unlink,unlinkat" : renames[n - 1].call;
    const size_t when = at_removal ? 1 : renames[n - 1].nth_of_call;
    std::vector<std::string> options = {
        "-o", "/dev/null",
        "-e", "trace=" + calls,
        "-e", "inject=" + calls + ":signal=KILL:when=" + std::to_string(when)};
    if (at_removal) options.insert(options.end(), {"-P", (run / "rewind.json").string()});
    const auto killed =
        run_traced(options, rewind_of(dir, run, (run / "checkpoints" / back_to).string()));
    INFO(killed.err);
    REQUIRE(killed.status == 137);
    if (n <= record) {  // the record is not on disk: nothing has changed
      CHECK_FALSE(std::filesystem::exists(run / "rewind.json"));
      CHECK(folder_bytes(run) == before);
      continue;
    }
    REQUIRE(std::filesystem::exists(run / "rewind.json"));
    if (n == record + 1) {  // the old branch's newest by name: refused, the folder left alone
      const auto kept = folder_bytes(run);
      auto old_branch = branch_job(dir, run, {"--set", "optimizer.lr=0.03"});
      old_branch.insert(old_branch.end(),
                        {"--resume", (run / "checkpoints" / "epoch-0002.pt").string()});
      const auto refused = run_dptrain(shell_words(old_branch));
      CHECK(refused.status == 5);
      CHECK_THAT(refused.err, ContainsSubstring("is not that checkpoint") &&
                                  ContainsSubstring("finish it first with --resume auto"));
      CHECK(folder_bytes(run) == kept);
    }
    auto resume = branch_job(dir, run, {"--set", "optimizer.lr=0.03"});
    resume.insert(resume.end(), {"--resume", "auto"});
    const auto resumed = run_dptrain(shell_words(resume));
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    CHECK_THAT(resumed.err,
               ContainsSubstring("going on from " + (run / "checkpoints" / back_to).string()));
    check_rewound(run, original, reference, reference_losses);
  }
}
