// dptrain sweep and compare through the real binary: a 2x2 grid side by side, a job array's
// single points, a preempted point that its task's requeue finishes, and mistakes named.
#include <csignal>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/runs.h"
#include "support/skip.h"

using namespace dptrain::testing;

namespace {

std::vector<std::string> sweep(const TempDir& dir, const std::filesystem::path& out,
                               const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"sweep",
                                   "--set",
                                   "data.dir=" + (dir / "data").string(),
                                   "--set",
                                   "train.epochs=1",
                                   "--set",
                                   "parallel.devices=cpu",
                                   "--set",
                                   "runtime.threads=1",
                                   "--grid",
                                   "optimizer.lr=0.05,0.1",
                                   "--grid",
                                   "data.batch_size=30,60",
                                   "--output",
                                   out.string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

int count_lines_with(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a sweep trains every point into its folder and ends with the comparison",
          "[cli][sweep]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 120, 30);
  const auto out = dir / "sweep";
  const auto listed = run_dptrain(shell_words(sweep(dir, out, {"--list"})));
  REQUIRE(listed.status == 0);
  CHECK(listed.out ==
        "0  optimizer.lr=0.05  data.batch_size=30\n1  optimizer.lr=0.05  data.batch_size=60\n"
        "2  optimizer.lr=0.1  data.batch_size=30\n3  optimizer.lr=0.1  data.batch_size=60\n");
  CHECK_FALSE(std::filesystem::exists(out));

  const auto swept = run_dptrain(shell_words(sweep(dir, out, {"--jobs", "2"})));
  INFO(swept.err);
  REQUIRE(swept.status == 0);
  for (int i = 0; i < 4; ++i) {
    const auto config = nlohmann::json::parse(
        dptrain::core::read_text_file(out / std::to_string(i) / "config.json"));
    CHECK(config["optimizer"]["lr"] == (i < 2 ? 0.05 : 0.1));
    CHECK(config["data"]["batch_size"] == (i % 2 == 0 ? 30 : 60));
    CHECK(summary_of(out / std::to_string(i)).at("epochs_run") == 1);
  }
  const std::string table = dptrain::core::read_text_file(out / "compare.md");
  CHECK(count_lines_with(table, "| finished | single | cpu | fp32 |") == 4);
  CHECK(table.find("| data.batch_size | optimizer.lr |") != std::string::npos);
  CHECK(table.find("not started") == std::string::npos);

  // The same sweep again leaves its finished points alone.
  const auto model_before = dptrain::core::read_text_file(out / "2" / "model.pt");
  const auto again = run_dptrain(shell_words(sweep(dir, out)));
  INFO(again.err);
  REQUIRE(again.status == 0);
  CHECK(count_lines_with(again.err, "finished already") == 4);
  CHECK(again.err.find("started") == std::string::npos);
  CHECK(dptrain::core::read_text_file(out / "2" / "model.pt") == model_before);

  const auto compared = run_dptrain(shell_words({"compare", out.string(), "--format", "json"}));
  REQUIRE(compared.status == 0);
  const auto rows = nlohmann::json::parse(compared.out);
  REQUIRE(rows.size() == 4);
  CHECK(rows[3]["differs"] == nlohmann::json{{"data.batch_size", "60"}, {"optimizer.lr", "0.1"}});
  CHECK(rows[3]["test_acc"] == summary_of(out / "3").at("test_acc"));

  if (run_program("/bin/sh", "-c 'command -v gnuplot'").status == 0) {
    const auto plotted =
        run_dptrain(shell_words({"compare", out.string(), "--plot", (dir / "s.svg").string()}));
    INFO(plotted.err);
    REQUIRE(plotted.status == 0);
    const std::string svg = dptrain::core::read_text_file(dir / "s.svg");
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK(svg.find("test acc") != std::string::npos);
  }
}

TEST_CASE("a job array's task runs its point alone; a preempted one goes on when requeued",
          "[cli][sweep][resume]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 30);
  const auto out = dir / "sweep";
  // Point 1 (lr 0.05, batch 60): 50 steps an epoch, stopped early by a preemption notice.
  BackgroundRun task(sweep(dir, out, {"--index", "1", "--set", "log.every_steps=1"}));
  REQUIRE(task.wait_for_stderr("(step 5)", 120));
  task.signal(SIGUSR1);
  const auto stopped = task.finish(120);
  INFO(stopped.err);
  CHECK(stopped.status == 75);
  CHECK_FALSE(std::filesystem::exists(out / "0"));
  const auto state = nlohmann::json::parse(dptrain::core::read_text_file(out / "1" / "state.json"));
  CHECK(state["state"] == "preempted");
  std::string table = dptrain::core::read_text_file(out / "compare.md");
  CHECK(table.find("| 1 | preempted | single | cpu | fp32 |") != std::string::npos);
  CHECK(table.find("3 of 4 points not started yet.") != std::string::npos);

  // The requeued task: the same command, which resumes the point from its checkpoint.
  const auto requeued =
      run_dptrain(shell_words(sweep(dir, out, {"--index", "1", "--set", "log.every_steps=1"})));
  INFO(requeued.err);
  REQUIRE(requeued.status == 0);
  CHECK_THAT(requeued.err, ContainsSubstring("resumed from"));
  CHECK(metrics_of(out / "1").at(0).at("train_samples") == 3000);
  table = dptrain::core::read_text_file(out / "compare.md");
  CHECK(table.find("| 1 | finished |") != std::string::npos);

  // Another grid in the same folder is refused; so is an index past the grid.
  auto other = sweep(dir, out, {"--index", "0"});
  other[other.size() - 7] = "optimizer.lr=0.3";  // the first --grid's values
  const auto refused = run_dptrain(shell_words(other));
  CHECK(refused.status == 2);
  CHECK_THAT(refused.err, ContainsSubstring("holds another sweep"));
  const auto past = run_dptrain(shell_words(sweep(dir, out, {"--index", "4"})));
  CHECK(past.status == 2);
  CHECK_THAT(past.err, ContainsSubstring("the grid has 4 points (0 to 3)"));
}

TEST_CASE("Ctrl-C sent to the sweep alone reaches its point once and starts no other",
          "[cli][sweep]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 30);
  const auto out = dir / "sweep";
  BackgroundRun run(sweep(dir, out, {"--set", "log.every_steps=1"}));
  REQUIRE(run.wait_for_stderr("(step 5)", 120));
  run.signal(SIGINT);  // the sweep's pid only: the point has a process group of its own
  const auto stopped = run.finish(120);
  INFO(stopped.err);
  CHECK(stopped.status == 130);
  CHECK_THAT(stopped.err, ContainsSubstring("interrupted by Ctrl-C"));
  CHECK_THAT(stopped.err, ContainsSubstring("sweep: point 0 ended with status 130"));
  CHECK_FALSE(std::filesystem::exists(out / "1"));
  const auto state = nlohmann::json::parse(dptrain::core::read_text_file(out / "0" / "state.json"));
  CHECK(state["state"] == "interrupted");
}

TEST_CASE("a sweep folder refuses the same sweep over an edited experiment file", "[cli][sweep]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 120, 30);
  const auto config = dir / "exp.json";
  write_text(config, R"({"name": "exp", "train": {"epochs": 1}})");
  auto args = sweep(dir, dir / "s", {"--index", "0"});
  args.insert(args.begin() + 1, {"--config", config.string()});
  REQUIRE(run_dptrain(shell_words(args)).status == 0);
  write_text(config, R"({"name": "exp", "train": {"epochs": 2}})");
  const auto edited = run_dptrain(shell_words(args));
  CHECK(edited.status == 2);
  CHECK_THAT(edited.err, ContainsSubstring("holds another sweep"));
}

TEST_CASE("a key given two --grid options is refused", "[cli][sweep]") {
  TempDir dir;
  const auto twice =
      run_dptrain(shell_words({"sweep", "--grid", "optimizer.lr=0.1,0.2", "--grid",
                               "optimizer.lr=0.3", "--output", (dir / "s").string()}));
  CHECK(twice.status == 2);
  CHECK_THAT(twice.err,
             ContainsSubstring("--grid optimizer.lr=0.3: optimizer.lr has a --grid already"));
  CHECK_FALSE(std::filesystem::exists(dir / "s"));
}

TEST_CASE("a sweep point that is no experiment is named before anything trains", "[cli][sweep]") {
  TempDir dir;
  const auto bad = run_dptrain(
      shell_words({"sweep", "--grid", "optimizer.lr=0.1,-1", "--output", (dir / "s").string()}));
  CHECK(bad.status == 3);
  CHECK_THAT(bad.err, ContainsSubstring("sweep point 1: "));
  CHECK_THAT(bad.err, ContainsSubstring("optimizer.lr"));
  CHECK_FALSE(std::filesystem::exists(dir / "s"));
}
