// dptrain sweep and compare through the real binary: a 2x2 grid side by side, a job array's
// single points, a preempted point that its task's requeue finishes, and mistakes named. And the
// grid's own spelling (Hydra's range() and choice()), read in-process.
#include <unistd.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "runs/sweep.h"
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

// The first line of `text` holding `part`, whole ("" when none does).
std::string line_with(const std::string& text, const std::string& part) {
  const size_t at = text.find(part);
  if (at == std::string::npos) return "";
  const size_t begin = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

std::vector<std::string> grid_values(const std::string& spec) {
  return dptrain::runs::parse_grid_axis(spec).values;
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

TEST_CASE("a job array's task runs its point alone, and a preempted one goes on when requeued",
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
  CHECK_THAT(stopped.err,
             ContainsSubstring("go on from there with: " +
                               std::filesystem::canonical(DPTRAIN_BINARY).string() + " train"));
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
  // The point's lines say whose they are, its epoch line among them.
  CHECK(line_with(requeued.err, "resumed from").rfind("[point 1] [", 0) == 0);
  CHECK_THAT(requeued.err, ContainsSubstring("[point 1] epoch 1/1  train loss"));
  CHECK(requeued.out.find("epoch 1/1") == std::string::npos);
  CHECK(metrics_of(out / "1").at(0).at("train_samples") == 3000);
  table = dptrain::core::read_text_file(out / "compare.md");
  CHECK(table.find("| 1 | finished |") != std::string::npos);

  // Another grid in the same folder is refused; so is an index past the grid.
  auto other = sweep(dir, out, {"--index", "0"});
  other[other.size() - 7] = "optimizer.lr=0.3";  // the first --grid's values
  const auto refused = run_dptrain(shell_words(other));
  CHECK(refused.status == 2);
  CHECK_THAT(refused.err, ContainsSubstring("holds another sweep: "));
  CHECK_THAT(refused.err, ContainsSubstring("--grid optimizer.lr: 0.05,0.1 there, 0.3 here"));
  CHECK_THAT(refused.err, ContainsSubstring("--set log.every_steps=1 there only"));
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
  CHECK_THAT(edited.err, ContainsSubstring("holds another sweep: the experiment file was edited "
                                           "since (its sha256 differs)"));
  write_text(config, R"({"name": "exp", "train": {"epochs": 1}})");
  args.insert(args.end(), {"--set", "model.init_std=0.2"});
  const auto set = run_dptrain(shell_words(args));
  CHECK(set.status == 2);
  CHECK_THAT(set.err, ContainsSubstring("holds another sweep: --set model.init_std=0.2 here only"));
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

TEST_CASE("a second whole sweep into a folder in use is refused at once, and the first goes on",
          "[cli][sweep]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 1200, 30);
  const auto out = dir / "sweep";
  BackgroundRun first(sweep(dir, out, {"--set", "log.every_steps=1"}));
  REQUIRE(first.wait_for_stderr("(step 5)", 120));
  const auto second = run_dptrain(shell_words(sweep(dir, out, {"--set", "log.every_steps=1"})));
  CHECK(second.status == 5);
  CHECK_THAT(second.err,
             ContainsSubstring(out.string() + ": another dptrain sweep runs there now (pid " +
                               std::to_string(first.pid()) + ")"));
  CHECK_THAT(second.err, ContainsSubstring("hint: wait for it to end"));
  CHECK(second.err.find("started") == std::string::npos);
  const auto finished = first.finish(300);
  INFO(finished.err);
  CHECK(finished.status == 0);
  CHECK(count_lines_with(finished.err, "ended with status 0") == 4);
  CHECK_FALSE(std::filesystem::exists(out / "sweep.pid"));
}

TEST_CASE("a job array's tasks train their points side by side in one sweep folder",
          "[cli][sweep][slow]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 3000, 30);
  const auto out = dir / "sweep";
  BackgroundRun task0(sweep(dir, out, {"--index", "0", "--set", "log.every_steps=1"}));
  REQUIRE(task0.wait_for_stderr("(step 5)", 120));
  const auto task1 =
      run_dptrain(shell_words(sweep(dir, out, {"--index", "1", "--set", "log.every_steps=1"})));
  INFO(task1.err);
  CHECK(task1.status == 0);
  const auto ended = task0.finish(300);
  INFO(ended.err);
  CHECK(ended.status == 0);
  for (const char* point : {"0", "1"}) CHECK(summary_of(out / point).at("epochs_run") == 1);
}

TEST_CASE("a sweep removes the temporary files that a killed sweep left in its folder",
          "[cli][sweep]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 120, 30);
  const auto out = dir / "sweep";
  std::filesystem::create_directories(out);
  std::filesystem::permissions(
      out, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
               std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
               std::filesystem::perms::others_exec);
  // Named after a process that runs (this one): only the folder's lock tells that they are stale.
  const std::string pid = std::to_string(::getpid());
  write_text(out / ("compare.md.tmp." + pid + ".0123456789abcdef"), "| half a table");
  write_text(out / ("sweep.json.tmp." + pid + ".0123456789abcdef"), "{\"config\"");
  write_text(out / "notes.md", "mine");
  const auto task = run_dptrain(shell_words(sweep(dir, out, {"--index", "0"})));
  INFO(task.err);
  REQUIRE(task.status == 0);
  CHECK_FALSE(std::filesystem::exists(out / ("compare.md.tmp." + pid + ".0123456789abcdef")));
  CHECK_FALSE(std::filesystem::exists(out / ("sweep.json.tmp." + pid + ".0123456789abcdef")));
  CHECK(std::filesystem::exists(out / "notes.md"));
}

TEST_CASE("a sweep records each point's thread count and warns when a re-run changes it",
          "[cli][sweep]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 120, 30);
  const auto out = dir / "sweep";
  const auto first = run_dptrain(shell_words(sweep(dir, out, {"--index", "0"})));  // 1 thread
  INFO(first.err);
  REQUIRE(first.status == 0);
  CHECK(first.err.find("will differ") == std::string::npos);
  auto recorded = nlohmann::json::parse(dptrain::core::read_text_file(out / "sweep.json"));
  CHECK(recorded["threads"] == nlohmann::json{{"0", 1}});

  // runtime.threads is no part of the sweep's identity: the task runs, and says what it costs.
  const auto more =
      run_dptrain(shell_words(sweep(dir, out, {"--index", "1", "--set", "runtime.threads=2"})));
  INFO(more.err);
  REQUIRE(more.status == 0);
  CHECK_THAT(more.err,
             ContainsSubstring("points run now with 2 threads, where sweep.json records 1"));
  CHECK_THAT(more.err, ContainsSubstring("will differ a little from an uninterrupted sweep's"));
  CHECK_THAT(more.err, ContainsSubstring("give the same --jobs as before"));
  CHECK_THAT(more.err, ContainsSubstring("or --set runtime.threads=1"));
  recorded = nlohmann::json::parse(dptrain::core::read_text_file(out / "sweep.json"));
  CHECK(recorded["threads"] == nlohmann::json{{"0", 1}, {"1", 2}});
}

TEST_CASE("a grid axis may be Hydra's range() or choice()", "[runs][sweep]") {
  using V = std::vector<std::string>;
  // Floats at their arguments' decimals, without the noise of 0.1 + 2 * 0.1; stop left out.
  CHECK(grid_values("optimizer.lr=range(0.1,0.5,0.1)") == V{"0.1", "0.2", "0.3", "0.4"});
  CHECK(grid_values("optimizer.lr=range(0.3, 0, -0.1)") == V{"0.3", "0.2", "0.1"});
  CHECK(grid_values("optimizer.lr=range(1e-05,4e-05,1e-05)") == V{"0.00001", "0.00002", "0.00003"});
  CHECK(grid_values("x=range(-0.2,0.25,0.1)") == V{"-0.2", "-0.1", "0", "0.1", "0.2"});
  CHECK(grid_values("x=range(1,2,0.25)") == V{"1", "1.25", "1.5", "1.75"});
  // Integers stay integers; the step is 1 unless given, and range(stop) starts at 0.
  CHECK(grid_values("train.epochs=range(1,4)") == V{"1", "2", "3"});
  CHECK(grid_values("data.batch_size=range(256, 1025, 256)") == V{"256", "512", "768", "1024"});
  CHECK(grid_values("x=range(3)") == V{"0", "1", "2"});
  CHECK(grid_values("x=range(10,0,-4)") == V{"10", "6", "2"});
  CHECK(grid_values("x=range(0,10000)").size() == 10000);
  // choice() holds a comma list, with the same brackets and quotes, spaces after commas allowed.
  CHECK(grid_values(R"(parallel.devices=choice(cpu, ["cpu","cpu"]))") ==
        V{"cpu", R"(["cpu","cpu"])"});
  CHECK(grid_values("optimizer.lr=0.05,0.1") == V{"0.05", "0.1"});

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"x=range(0.1,0.5,0)", "--grid x=range(0.1,0.5,0): a step of 0"},
      {"x=range(1,4,0)", "a step of 0"},
      {"x=range(4,1)", "range() holds no values: the step must lead from start towards stop"},
      {"x=range(0.1,0.5,-0.1)", "holds no values"},
      {"x=range(0,10001)", "more than 10000 values"},
      {"x=range(1e20,2e20,1)", "more than 10000 values"},
      {"x=range(1,4", "range( is not closed"},
      {"x=range(1,4)0", "range( is not closed"},
      {"x=range()", "range() holds no values"},
      {"x=range(1,2,3,4)", "range() takes start, stop and step"},
      {"x=range(a,3)", "range(): a is no number"},
      {"x=range(0,inf,1)", "range(): inf is no number"},
      {"x=choice(a,b", "choice( is not closed"},
      {"x=choice()", "choice() holds no values"},
      {"x=choice(a,,b)", "an empty value"},
      {"x=choice([a,b)", "unbalanced brackets or quotes"},
  };
  for (const auto& [spec, message] : bad) {
    INFO(spec);
    CHECK_THROWS_WITH(grid_values(spec), ContainsSubstring(message));
  }
}

TEST_CASE("a sweep lists a range() grid's points, and refuses a grid too large", "[cli][sweep]") {
  TempDir dir;
  const auto listed = run_dptrain(shell_words(
      {"sweep", "--grid", "optimizer.lr=range(0.1,0.4,0.1)", "--grid", "train.epochs=choice(1, 2)",
       "--set", "parallel.devices=cpu", "--list", "--output", (dir / "s").string()}));
  INFO(listed.err);
  REQUIRE(listed.status == 0);
  CHECK(listed.out ==
        "0  optimizer.lr=0.1  train.epochs=1\n1  optimizer.lr=0.1  train.epochs=2\n"
        "2  optimizer.lr=0.2  train.epochs=1\n3  optimizer.lr=0.2  train.epochs=2\n"
        "4  optimizer.lr=0.3  train.epochs=1\n5  optimizer.lr=0.3  train.epochs=2\n");
  const auto bad = run_dptrain(shell_words(
      {"sweep", "--grid", "optimizer.lr=range(0.1,0.5,0)", "--output", (dir / "s").string()}));
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, ContainsSubstring("--grid optimizer.lr=range(0.1,0.5,0): a step of 0"));
  CHECK_THAT(bad.err, ContainsSubstring("hint: range(start,stop,step)"));
  const auto huge =
      run_dptrain(shell_words({"sweep", "--grid", "model.init_std=range(1,201)", "--grid",
                               "train.epochs=range(1,101)", "--output", (dir / "s").string()}));
  CHECK(huge.status == 2);
  CHECK_THAT(huge.err, ContainsSubstring("the grid would have more than 10000 points"));
  CHECK_FALSE(std::filesystem::exists(dir / "s"));
}
