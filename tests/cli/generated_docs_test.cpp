// The manual page and bash completion that the build generates: every subcommand, option and
// experiment key in them, and a completion script bash accepts and answers from.
#include <algorithm>
#include <sstream>

#include "config/schema.h"
#include "support/catch.h"
#include "support/fixtures.h"

using namespace dptrain;
using testing::run_dptrain;
using testing::run_program;

TEST_CASE("the manual page holds every subcommand, its options and every key", "[cli]") {
  const auto man = run_dptrain("--man-page");
  REQUIRE(man.status == 0);
  CHECK(man.out.rfind(".TH DPTRAIN 1", 0) == 0);
  for (const std::string sub :
       {"train", "evaluate", "predict", "preview", "config", "info", "compare", "sweep"}) {
    CHECK(man.out.find(".SH \"dptrain " + sub + "\"") != std::string::npos);
  }
  for (const std::string option :
       {"\\-\\-grid", "\\-\\-plot", "\\-\\-resume", "\\-\\-index", "\\-\\-epoch"}) {
    CHECK(man.out.find(option) != std::string::npos);
  }
  for (const auto& key : config::schema()) {
    INFO(key.path);
    CHECK(man.out.find(".B " + key.path + "\n") != std::string::npos);
  }
  // The keys' Markdown is made plain text; no line starts with a dot roff would take as a request.
  CHECK(man.out.find("](") == std::string::npos);
  CHECK(man.out.find('`') == std::string::npos);
  std::istringstream lines(man.out);
  const std::vector<std::string> requests = {".TH", ".SH", ".TP", ".B", ".PP", ".nf", ".fi", ".I"};
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '.') continue;
    INFO(line);
    CHECK(std::any_of(requests.begin(), requests.end(), [&](const std::string& r) {
      return line == r || line.rfind(r + " ", 0) == 0;
    }));
  }
}

TEST_CASE("bash completion completes subcommands, options and --set keys", "[cli]") {
  const auto script = run_dptrain("--bash-completion");
  REQUIRE(script.status == 0);
  testing::TempDir dir;
  testing::write_text(dir / "completion", script.out);
  const auto complete = [&](const std::string& words, int cword) {
    return run_program(
        "/bin/bash",
        "-c " + testing::shell_words({"source " + (dir / "completion").string() + "; COMP_WORDS=(" +
                                      words + "); COMP_CWORD=" + std::to_string(cword) +
                                      "; _dptrain; echo \"${COMPREPLY[*]}\""}));
  };
  CHECK(complete("dptrain sw", 1).out == "sweep\n");
  CHECK(complete("dptrain train --set log.t", 3).out == "log.tensorboard=\n");
  CHECK(complete("dptrain compare --fo", 2).out == "--format\n");
  CHECK(complete("dptrain sweep --l", 2).out == "--list\n");
  // A file name with a space stays one word.
  testing::write_text(dir / "my run.json", "{}");
  const auto files = run_program(
      "/bin/bash", "-c " + testing::shell_words(
                               {"source " + (dir / "completion").string() +
                                "; COMP_WORDS=(dptrain train --config " + (dir / "my").string() +
                                "); COMP_CWORD=3; _dptrain; echo ${#COMPREPLY[@]}; "
                                "echo \"${COMPREPLY[0]}\""}));
  CHECK(files.out == "1\n" + (dir / "my run.json").string() + "\n");
}
