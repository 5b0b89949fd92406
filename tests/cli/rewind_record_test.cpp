// The record a killed rewind leaves (run/rewind_record.h), as the next start reads it: one that
// dptrain wrote goes on from the checkpoint it names in the folder it is in, wherever that folder
// has been moved; one whose checkpoint is gone says how to give the rewind up, and that way out
// works; and one that dptrain did not write is refused, naming the file and what is wrong with it,
// before anything in the folder changes. The records are written here as a rewind killed right
// after writing its own would leave them (rewind_kill_test kills real ones).
#include "support/catch.h"

#include <nlohmann/json.hpp>

#include "support/branches.h"
#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

constexpr char kRewoundTo[] = "epoch-0000-batch-000010.pt";  // 10 steps into epoch 0

// The record of a rewind to kRewoundTo, as write_rewind_record writes it.
nlohmann::json record_of_rewind() {
  return {{"resume", kRewoundTo},
          {"after_epochs", 0},
          {"after_batches", 10},
          {"aside", "abandoned-20261202-120000"}};
}

void write_record(const std::filesystem::path& run, const nlohmann::json& record) {
  write_text(run / "rewind.json", record.dump(2) + "\n");
}

// A finished branch_job run, copied to `name` for each case.
struct FinishedRun {
  TempDir dir;
  std::filesystem::path original = dir / "original";

  FinishedRun() {
    write_real_subset(dir / "data", 600, 60);
    REQUIRE(run_dptrain(shell_words(branch_job(dir, original))).status == 0);
  }

  std::filesystem::path copy(const std::string& name) const {
    const auto run = dir / name;
    std::filesystem::copy(original, run, std::filesystem::copy_options::recursive);
    return run;
  }
};

}  // namespace

TEST_CASE(
    "a killed rewind's record goes on from the checkpoint of the folder it is in, moved or not, "
    "with that checkpoint gone it says how to give the rewind up, and that way out works",
    "[cli][resume][rewind]") {
  const FinishedRun runs;
  const auto whole = runs.copy("whole");
  const auto left_alone = run_dptrain(
      shell_words(rewind_of(runs.dir, whole, (whole / "checkpoints" / kRewoundTo).string())));
  INFO(left_alone.err);
  REQUIRE(left_alone.status == 0);

  // Killed once its record was on disk, then the run folder renamed: the record names the
  // checkpoint in whichever folder holds it, so the copy goes on from its own.
  const auto killed = runs.copy("killed");
  write_record(killed, record_of_rewind());
  const auto moved = runs.dir / "moved";
  std::filesystem::rename(killed, moved);
  const auto resumed = run_dptrain(shell_words(rewind_of(runs.dir, moved, "auto")));
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.err,
             ContainsSubstring("going on from " + (moved / "checkpoints" / kRewoundTo).string()));
  CHECK_FALSE(std::filesystem::exists(moved / "rewind.json"));
  CHECK(max_relative_difference(load_parameters(moved / "model.pt"),
                                load_parameters(whole / "model.pt")) == 0);
  CHECK(train_losses(moved) == train_losses(whole));
  const auto aside = folders_named_abandoned(moved / "checkpoints");
  REQUIRE(aside.size() == 1);
  CHECK(aside[0].filename() == "abandoned-20261202-120000");
  CHECK(folder_bytes(aside[0]).size() == 6);  // steps 15 to 40 of the old branch

  // A rewind by the checkpoint's bare name, from inside the checkpoint folder: a checkpoint of
  // the run's own (once taken for one from outside, which set every checkpoint aside).
  const auto bare = runs.copy("bare");
  const auto by_bare_name =
      run_dptrain(shell_words(rewind_of(runs.dir, bare, kRewoundTo)), bare / "checkpoints");
  INFO(by_bare_name.err);
  REQUIRE(by_bare_name.status == 0);
  CHECK(train_losses(bare) == train_losses(whole));
  const auto bare_aside = folders_named_abandoned(bare / "checkpoints");
  REQUIRE(bare_aside.size() == 1);
  CHECK(folder_bytes(bare_aside[0]).size() == 6);

  // Through a link to it from elsewhere: still the run's own checkpoint.
  const auto linked = runs.copy("linked");
  const auto link = runs.dir / "link.pt";
  std::filesystem::create_symlink(linked / "checkpoints" / kRewoundTo, link);
  const auto by_link = run_dptrain(shell_words(rewind_of(runs.dir, linked, link.string())));
  INFO(by_link.err);
  REQUIRE(by_link.status == 0);
  CHECK(train_losses(linked) == train_losses(whole));
  const auto linked_aside = folders_named_abandoned(linked / "checkpoints");
  REQUIRE(linked_aside.size() == 1);
  CHECK(folder_bytes(linked_aside[0]).size() == 6);

  // The record's checkpoint removed: neither --resume auto nor another checkpoint goes on, each
  // says how to give the rewind up, and the folder stays as it was.
  const auto gone = runs.copy("gone");
  write_record(gone, record_of_rewind());
  std::filesystem::remove(gone / "checkpoints" / kRewoundTo);
  const auto before = folder_bytes(gone);
  const std::string give_up = "remove " + (gone / "rewind.json").string() + " to give it up";
  const auto by_auto = run_dptrain(shell_words(rewind_of(runs.dir, gone, "auto")));
  CHECK(by_auto.status == 5);
  CHECK_THAT(by_auto.err, ContainsSubstring(kRewoundTo + std::string(": no such checkpoint")) &&
                              ContainsSubstring(give_up));
  const auto other = (gone / "checkpoints" / "epoch-0000-batch-000005.pt").string();
  const auto by_name = run_dptrain(shell_words(rewind_of(runs.dir, gone, other)));
  CHECK(by_name.status == 5);
  CHECK_THAT(by_name.err, ContainsSubstring("its checkpoint is gone or unreadable") &&
                              ContainsSubstring(give_up));
  CHECK(folder_bytes(gone) == before);
  // Damaged instead: the same way out, named as the record's.
  write_text(gone / "checkpoints" / kRewoundTo, "");
  const auto damaged = run_dptrain(shell_words(rewind_of(runs.dir, gone, "auto")));
  CHECK(damaged.status == 5);
  CHECK_THAT(damaged.err, ContainsSubstring((gone / "rewind.json").string() +
                                            ": the rewind it records cannot go on: ") &&
                              ContainsSubstring(give_up));
  std::filesystem::remove(gone / "checkpoints" / kRewoundTo);
  std::filesystem::remove(gone / "rewind.json");
  const auto given_up = run_dptrain(shell_words(rewind_of(runs.dir, gone, other)));
  INFO(given_up.err);
  CHECK(given_up.status == 0);
}

TEST_CASE(
    "a rewind record dptrain did not write is refused before anything in the run folder changes, "
    "naming the file and what is wrong with it",
    "[cli][resume][rewind][security]") {
  const FinishedRun runs;
  const auto run = runs.copy("run");
  const auto record_path = run / "rewind.json";
  const auto refused_with = [&](const std::string& what) {
    const auto before = folder_bytes(run);
    const auto result = run_dptrain(shell_words(rewind_of(runs.dir, run, "auto")));
    CHECK(result.status == 5);
    CHECK_THAT(result.err, ContainsSubstring(record_path.string() +
                                             ": not the record of a rewind under way: " + what));
    CHECK(folder_bytes(run) == before);
  };
  const auto with = [](const char* key, const nlohmann::json& value) {
    auto record = record_of_rewind();
    record[key] = value;
    return record;
  };
  const auto without = [](const char* key) {
    auto record = record_of_rewind();
    record.erase(key);
    return record;
  };
  // A rewind to a checkpoint from outside the folder, which sets every checkpoint there aside.
  const auto everything_from = [](const std::string& resume) {
    auto record = record_of_rewind();
    record["resume"] = resume;
    record["after_epochs"] = -1;
    record["after_batches"] = -1;
    return record;
  };
  struct Case {
    const char* name;
    nlohmann::json record;
    std::string what;
  };
  const std::vector<Case> cases = {
      // libstdc++'s regex matcher once overflowed the stack on a name this long.
      {"a long aside", with("aside", "abandoned-" + std::string(50000, '7')),
       "\"aside\" is not the name of an abandoned-<time> folder"},
      {"an aside outside", with("aside", "../abandoned-20261202-120000"),
       "\"aside\" is not the name of an abandoned-<time> folder"},
      {"a null aside", with("aside", nullptr), "\"aside\" is not a string"},
      {"no checkpoint", without("resume"), "\"resume\" is missing"},
      {"a checkpoint elsewhere by a relative path",
       with("resume", "../../original/checkpoints/" + std::string(kRewoundTo)),
       "a checkpoint of the run's own is named by its file name alone"},
      {"a relative checkpoint from outside", everything_from(kRewoundTo),
       "a checkpoint from outside the run's is named by an absolute path"},
      {"a later position", with("after_batches", 15),
       "it goes back to 0 finished epoch(s) and 15 batch(es), but " +
           (run / "checkpoints" / kRewoundTo).string() +
           " was written after 0 finished epoch(s) and 10 batch(es)"},
      // Taken as it says, it would set aside the very checkpoint it goes on from.
      {"an earlier position", with("after_batches", 5),
       "it goes back to 0 finished epoch(s) and 5 batch(es), but"},
      {"the largest position", with("after_epochs", INT64_MAX),
       "it goes back to 9223372036854775807 finished epoch(s)"},
      {"no name", with("resume", ""),
       "a checkpoint of the run's own is named by its file name alone"},
      {"the folder itself", with("resume", "."),
       "a checkpoint of the run's own is named by its file name alone"},
      {"the folder above", with("resume", ".."),
       "a checkpoint of the run's own is named by its file name alone"},
      {"a name with a NUL", with("resume", std::string(kRewoundTo) + std::string(1, '\0') + "x"),
       "a checkpoint of the run's own is named by its file name alone"},
      {"a name longer than a file's", with("resume", std::string(300, 'e') + ".pt"),
       "a checkpoint of the run's own is named by its file name alone"},
      {"a checkpoint of the folder's own from outside",
       everything_from((run / "checkpoints" / kRewoundTo).string()),
       "a checkpoint in the run's checkpoint folder is named by its file name and the position"},
      {"a negative position", with("after_batches", -3),
       "the position it goes back to is negative"},
      {"no object", nlohmann::json::array({1, 2}), "it is no JSON object"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    write_record(run, c.record);
    refused_with(c.what);
  }
  // A record of the right form in a file that is not one dptrain writes: a link, a folder, and
  // more bytes than a record can need.
  std::filesystem::remove(record_path);
  write_text(runs.dir / "rewind.json", record_of_rewind().dump(2) + "\n");
  std::filesystem::create_symlink(runs.dir / "rewind.json", record_path);
  refused_with("it is a link");
  std::filesystem::remove(record_path);
  std::filesystem::create_directory(record_path);
  refused_with("is a directory");
  std::filesystem::remove(record_path);
  const std::string padded = record_of_rewind().dump() + std::string(100000, ' ');
  write_text(record_path, padded);
  refused_with(std::to_string(padded.size()) + " bytes, more than the 65536 any such file needs");
}
