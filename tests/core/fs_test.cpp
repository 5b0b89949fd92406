#include "support/catch.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fs.h"
#include "support/fixtures.h"
#include "support/skip.h"

using dptrain::core::Error;
using dptrain::core::ErrorCode;
using dptrain::testing::TempDir;

TEST_CASE("an atomic write replaces the file whole and leaves no temporary behind", "[core]") {
  TempDir dir;
  const auto path = dir / "summary.json";
  dptrain::core::write_file_atomic(path, "first\n");
  dptrain::core::write_file_atomic(path, "second\n");
  CHECK(dptrain::core::read_text_file(path) == "second\n");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("an atomic write into a missing folder is an I/O error naming the file", "[core]") {
  TempDir dir;
  const auto path = dir / "missing" / "summary.json";
  try {
    dptrain::core::write_file_atomic(path, "x");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kIo);
    CHECK_THAT(e.what(), ContainsSubstring((dir / "missing").string()));
  }
}

TEST_CASE("an atomic write replaces a link planted at its path, and never writes through it",
          "[core][security]") {
  TempDir dir;
  const auto target = dir / "precious";
  dptrain::testing::write_text(target, "keep me\n");
  std::filesystem::create_symlink(target, dir / "metrics.jsonl");
  dptrain::core::write_file_atomic(dir / "metrics.jsonl", "new\n", 0600);
  CHECK(dptrain::core::read_text_file(target) == "keep me\n");
  CHECK_FALSE(std::filesystem::is_symlink(dir / "metrics.jsonl"));
  CHECK(dptrain::core::read_text_file(dir / "metrics.jsonl") == "new\n");
  CHECK((std::filesystem::status(dir / "metrics.jsonl").permissions() &
         std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
}

TEST_CASE("output folders are made when missing, and one every user may write to is refused",
          "[core][security]") {
  TempDir dir;
  const auto mine = dir / "runs" / "new";
  dptrain::core::ensure_own_folder(mine, "the output folder");  // made, with its parents
  CHECK(std::filesystem::is_directory(mine));
  const auto open = dir / "open";
  std::filesystem::create_directory(open);
  std::filesystem::permissions(open, std::filesystem::perms::all);
  CHECK_THROWS_WITH(dptrain::core::ensure_own_folder(open, "the output folder"),
                    (open.string() + ": every user may write to the output folder"));
}

TEST_CASE("a folder of another user is refused for output", "[core][security]") {
  if (::geteuid() != 0) DPTRAIN_SKIP("needs root, to give a folder to another user (CI is root)");
  TempDir dir;
  const auto theirs = dir / "theirs";
  std::filesystem::create_directory(theirs);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  CHECK_THROWS_WITH(dptrain::core::ensure_own_folder(theirs, "the output folder"),
                    theirs.string() + ": the output folder belongs to another user (uid 65534)");
}

TEST_CASE(
    "an output folder under a folder of another user, or under one every user may write to, is "
    "refused however far up it lies",
    "[core][security]") {
  TempDir dir;
  // Everyone may write to the grandparent (not sticky): anyone could rename the parent mid-run
  // and put a folder of their own in its place.
  const auto open = dir / "open";
  std::filesystem::create_directories(open / "parent");
  std::filesystem::permissions(open, std::filesystem::perms::all);
  CHECK_THROWS_WITH(dptrain::core::ensure_own_folder(open / "parent" / "run", "the output folder"),
                    (open / "parent" / "run").string() + ": the output folder lies under " +
                        open.string() +
                        ", which every user may write to: anyone could move it "
                        "away and put a folder of their own in its place");
  // Sticky, as /tmp is: only an entry's owner may rename it.
  std::filesystem::permissions(open, std::filesystem::perms::sticky_bit,
                               std::filesystem::perm_options::add);
  dptrain::core::ensure_own_folder(open / "parent" / "run", "the output folder");
  // The same through a link of this user's: the folders above its target count.
  std::filesystem::permissions(open, std::filesystem::perms::sticky_bit,
                               std::filesystem::perm_options::remove);
  std::filesystem::create_directory_symlink(open / "parent", dir / "link");
  CHECK_THROWS_WITH(dptrain::core::ensure_own_folder(dir / "link" / "run", "the output folder"),
                    ContainsSubstring("lies under " + open.string() + ", which every user"));
  if (::geteuid() != 0) DPTRAIN_SKIP("needs root, to give a folder to another user (CI is root)");
  const auto theirs = dir / "theirs";
  std::filesystem::create_directories(theirs / "mine");
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  CHECK_THROWS_WITH(dptrain::core::ensure_own_folder(theirs / "mine" / "run", "the output folder"),
                    ContainsSubstring("the output folder lies under " + theirs.string() +
                                      ", which belongs to another user (uid 65534), who could "
                                      "move it away"));
  // A folder its group may write to, when that group is not the user's own.
  const auto shared = dir / "shared";
  std::filesystem::create_directories(shared / "sub");
  REQUIRE(::chown(shared.c_str(), 0, 65534) == 0);
  REQUIRE(::chmod(shared.c_str(), 0775) == 0);
  CHECK_THROWS_WITH(
      dptrain::core::ensure_own_folder(shared / "sub" / "run", "the output folder"),
      ContainsSubstring("lies under " + shared.string() + ", which group 65534 may write to"));
  // A link of this user's that leads through a link another user made: that one could be
  // pointed elsewhere mid-run.
  std::filesystem::create_directories(dir / "safe");
  std::filesystem::create_directories(dir / "elsewhere");
  std::filesystem::create_directories(dir / "between");
  std::filesystem::create_directory_symlink(dir / "elsewhere", dir / "between" / "theirs");
  REQUIRE(::lchown((dir / "between" / "theirs").c_str(), 65534, 65534) == 0);
  std::filesystem::create_directory_symlink(dir / "between" / "theirs", dir / "safe" / "mine");
  CHECK_THROWS_WITH(
      dptrain::core::ensure_own_folder(dir / "safe" / "mine" / "run", "the output folder"),
      ContainsSubstring("lies through " + (dir / "between" / "theirs").string() +
                        ", a link that another user (uid 65534) made"));
  // "link/.." is the folder above the link's target, as the kernel takes it, not the folder the
  // link is in.
  REQUIRE(::lchown((dir / "between" / "theirs").c_str(), 0, 0) == 0);
  const auto foreign = dir / "foreign";
  std::filesystem::create_directories(foreign / "sub");
  REQUIRE(::chown(foreign.c_str(), 65534, 65534) == 0);
  std::filesystem::create_directory_symlink(foreign / "sub", dir / "safe" / "into");
  CHECK_THROWS_WITH(
      dptrain::core::ensure_own_folder(dir / "safe" / "into" / ".." / "run", "the output folder"),
      ContainsSubstring("lies under " + foreign.string() + ", which belongs to another user"));
  // The same chain of this user's own links is fine.
  REQUIRE(::lchown((dir / "between" / "theirs").c_str(), 0, 0) == 0);
  dptrain::core::ensure_own_folder(dir / "safe" / "mine" / "run", "the output folder");
  CHECK(std::filesystem::is_directory(dir / "elsewhere" / "run"));
}

TEST_CASE("the temporary files of a writer that was killed are removed, a live writer's kept",
          "[core]") {
  TempDir dir;
  // A process that has ended: its pid is free (until the system hands it out again).
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string gone = std::to_string(dead);
  const std::string alive = std::to_string(::getppid());
  for (const std::string& name :
       {"epoch-0002.pt.tmp." + gone + ".0123456789abcdef", "metrics.jsonl.tmp." + gone,
        "epoch-0003.pt.tmp." + alive + ".fedcba9876543210", std::string("notes.tmp.txt")}) {
    dptrain::testing::write_text(dir / name, "x");
  }
  CHECK(dptrain::core::remove_stale_temporaries(dir.path()) == 2);
  CHECK_FALSE(std::filesystem::exists(dir / ("epoch-0002.pt.tmp." + gone + ".0123456789abcdef")));
  CHECK(std::filesystem::exists(dir / ("epoch-0003.pt.tmp." + alive + ".fedcba9876543210")));
  CHECK(std::filesystem::exists(dir / "notes.tmp.txt"));
}
