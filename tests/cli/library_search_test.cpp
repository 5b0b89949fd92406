// Where dptrain's libraries come from: the loader's own folders and LibTorch's, never a folder
// that another user could make. A program's search path (DT_RPATH, DT_RUNPATH) naming the build
// tree, the binary's own folder ($ORIGIN) or the folder it starts in would load whatever library
// is planted there, with its constructors, before main().
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

// The lines of `text` that hold `part`.
std::vector<std::string> lines_with(const std::string& text, const std::string& part) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find(part) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// The loader's list of what `program` loads ("soname => path (address)"), as the user `uid` (as
// this process's when -1), started in `cwd`. The loader maps and resolves, and runs nothing.
std::string loaded_by(const std::filesystem::path& program, int uid = -1,
                      const std::filesystem::path& cwd = {}) {
  // env sets the loader's switch for `program` alone, not for setpriv or a shell before it.
  std::vector<std::string> words = {"LD_TRACE_LOADED_OBJECTS=1", program.string()};
  std::filesystem::path runner = "/usr/bin/env";
  if (uid >= 0) {
    words.insert(words.begin(), {"--reuid=" + std::to_string(uid), "--regid=" + std::to_string(uid),
                                 "--clear-groups", "/usr/bin/env"});
    runner = "/usr/bin/setpriv";
  }
  const auto listed = run_program(runner, shell_words(words), cwd);
  INFO(listed.err);
  REQUIRE(listed.status == 0);
  return listed.out;
}

// Each "soname => path" of the loader's list.
std::vector<std::pair<std::string, std::string>> resolved(const std::string& listed) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& line : lines_with(listed, " => ")) {
    const size_t arrow = line.find(" => ");
    const size_t open = line.find(" (", arrow);
    std::string soname = line.substr(0, arrow);
    soname.erase(0, soname.find_first_not_of(" \t"));
    pairs.emplace_back(soname, line.substr(arrow + 4, open - arrow - 4));
  }
  return pairs;
}

}  // namespace

TEST_CASE("dptrain's search path names no folder but LibTorch's", "[cli][security]") {
  const auto dynamic = run_program("/usr/bin/readelf", shell_words({"-d", DPTRAIN_BINARY}));
  REQUIRE(dynamic.status == 0);
  for (const std::string& line : lines_with(dynamic.out, "path: [")) {
    INFO(line);
    const size_t from = line.find('[') + 1;
    std::istringstream entries(line.substr(from, line.find(']') - from));
    for (std::string entry; std::getline(entries, entry, ':');) {
      CHECK(entry == DPTRAIN_TORCH_LIBRARY_DIR);  // never empty (the start folder) nor $ORIGIN
    }
  }
}

TEST_CASE(
    "a copy of dptrain in a folder anyone may write, started by another user and by root, takes "
    "no library planted there or where its build tree's stand-ins were",
    "[cli][security]") {
  if (geteuid() != 0)
    DPTRAIN_SKIP("plants as root and as another user, and starts dptrain as both");
  namespace fs = std::filesystem;
  constexpr int kNobody = 65534;
  TempDir dir;
  // A folder like /tmp (anyone may add to it, sticky), with dptrain copied in as a user would.
  const auto shared = dir / "shared";
  fs::create_directory(shared);
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(shared, fs::perms::all | fs::perms::sticky_bit);
  const auto copy = shared / "dptrain";
  fs::copy_file(DPTRAIN_BINARY, copy);
  // Every library it loads, under its soname, as a copy of zlib (a valid ELF file the loader
  // would take): planted by another user beside the copy and in the folder of stand-ins a build
  // tree once had there, and by root where this build tree's stand-ins were.
  const auto needed = resolved(loaded_by(copy));
  REQUIRE(needed.size() > 5);
  std::string zlib;
  for (const auto& [soname, path] : needed) {
    if (soname == "libz.so.1") zlib = path;
  }
  REQUIRE_FALSE(zlib.empty());
  std::string plant = "mkdir " + (shared / "unused-torch-libraries").string();
  for (const auto& [soname, path] : needed) {
    for (const auto& folder : {shared, shared / "unused-torch-libraries"}) {
      plant += " && cp " + zlib + " " + (folder / soname).string();
    }
  }
  const auto planted = run_program(
      "/usr/bin/setpriv",
      shell_words({"--reuid=" + std::to_string(kNobody), "--regid=" + std::to_string(kNobody),
                   "--clear-groups", "/bin/sh", "-c", plant}));
  INFO(planted.err);
  REQUIRE(planted.status == 0);
  const fs::path old_stand_ins = fs::path(DPTRAIN_BUILD_DIR) / "unused-torch-libraries";
  REQUIRE_FALSE(fs::exists(old_stand_ins));  // configure removes a stale one
  struct Unplant {
    fs::path folder;
    ~Unplant() { fs::remove_all(folder); }
  } unplant{old_stand_ins};
  fs::create_directory(old_stand_ins);
  for (const auto& [soname, path] : needed) fs::copy_file(zlib, old_stand_ins / soname);
  const std::vector<fs::path> planted_in = {shared, shared / "unused-torch-libraries",
                                            old_stand_ins};
  for (const int uid : {kNobody, 0}) {
    const std::string listed = loaded_by(copy, uid, shared);
    INFO("uid " << uid << "\n" << listed);
    for (const auto& [soname, path] : resolved(listed)) {
      for (const auto& folder : planted_in) CHECK(fs::path(path).parent_path() != folder);
    }
  }
  const auto started = run_program(copy, "--version", shared);
  CHECK(started.status == 0);
  CHECK(started.out.rfind("dptrain ", 0) == 0);
}

TEST_CASE("dptrain takes no library from the folder it starts in", "[cli][security]") {
  // A copy of a library dptrain needs, under its soname, in the folder it starts in: an empty
  // entry in the program's search path (CMake pads its own with them) would make the loader take
  // it, before the system's.
  const auto zlib = lines_with(loaded_by(DPTRAIN_BINARY), "libz.so.1 => ");
  REQUIRE(zlib.size() == 1);
  const std::string system_copy =
      zlib[0].substr(zlib[0].find("=> ") + 3, zlib[0].find(" (") - zlib[0].find("=> ") - 3);
  TempDir cwd;
  std::filesystem::copy_file(system_copy, cwd / "libz.so.1");
  const std::string listed_there = loaded_by(DPTRAIN_BINARY, -1, cwd.path());
  INFO(listed_there);
  const auto planted = lines_with(listed_there, "libz.so.1");
  REQUIRE(planted.size() == 1);
  CHECK(planted[0].find("=> " + system_copy + " ") != std::string::npos);
}
