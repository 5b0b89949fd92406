// compare's table from run folders made by hand, so that every cell is known: what differs, the
// figures of finished epochs, and the states of runs that did not finish. And the sweep's grid.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/wall_clock.h"
#include "run/reader.h"
#include "runs/compare.h"
#include "runs/sweep.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/memory.h"

using namespace dptrain;
using testing::TempDir;
using testing::write_text;

namespace {

nlohmann::json config_with_lr(double lr) {
  return {{"name", "x"},
          {"optimizer", {{"lr", lr}, {"momentum", 0.0}}},
          {"train", {{"epochs", 2}}},
          {"parallel", {{"backend", "single"}, {"devices", "cpu"}}},
          {"precision", "fp32"}};
}

nlohmann::json epoch(int e, double test_acc, double train_sec) {
  return {{"epoch", e},
          {"test_acc", test_acc},
          {"train_loss", 1.0 / e},
          {"train_sec", train_sec},
          {"train_samples", 100}};
}

void write_run(const std::filesystem::path& dir, const nlohmann::json& config,
               const std::vector<nlohmann::json>& epochs, const std::string& state, int pid = 0) {
  std::filesystem::create_directories(dir);
  write_text(dir / "config.json", config.dump());
  std::string lines;
  for (const auto& e : epochs) lines += e.dump() + "\n";
  write_text(dir / "metrics.jsonl", lines);
  write_text(dir / "state.json",
             nlohmann::json{{"state", state}, {"pid", pid}, {"host", core::host_name()}}.dump());
}

// A pid that no process has: a child that has ended and been reaped.
int dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

}  // namespace

TEST_CASE("compare shows what differs and what each run measured, unfinished runs as such",
          "[runs]") {
  TempDir dir;
  write_run(dir / "a", config_with_lr(0.1), {epoch(1, 0.5, 2), epoch(2, 0.7, 4)}, "finished");
  write_text(dir / "a" / "summary.json", nlohmann::json{{"test_acc", 0.7},
                                                        {"backend", "ddp"},
                                                        {"devices", {"cpu", "cpu"}},
                                                        {"precision", "fp32"},
                                                        {"best_epoch", nullptr}}
                                             .dump());
  write_run(dir / "b", config_with_lr(0.2), {epoch(1, 0.6, 1)}, "preempted");
  write_run(dir / "c", config_with_lr(0.2), {}, "running", dead_pid());
  write_run(dir / "d", config_with_lr(0.2), {epoch(1, 0.4, 1), epoch(2, 0.3, 1)}, "running",
            static_cast<int>(::getpid()));

  const auto found = run::find_runs({dir.path().string()});
  REQUIRE(found.size() == 4);
  std::vector<run::RunView> views;
  for (const auto& f : found) views.push_back(run::read_run(f));
  CHECK(runs::differing_keys(views) == std::vector<std::string>{"optimizer.lr"});
  CHECK(runs::run_names(views) == std::vector<std::string>{"a", "b", "c", "d"});
  const runs::Table table = runs::compare_runs(views);
  CHECK(table.columns == std::vector<std::string>{"run", "state", "backend", "devices", "precision",
                                                  "optimizer.lr", "epochs", "test_acc",
                                                  "best_epoch", "sec/epoch", "samples/s"});
  using Row = std::vector<std::string>;
  CHECK(table.rows[0] ==
        Row{"a", "finished", "ddp", "cpu,cpu", "fp32", "0.1", "2/2", "0.7000", "2", "3.00", "33"});
  CHECK(table.rows[1] ==
        Row{"b", "preempted", "single", "cpu", "fp32", "0.2", "1/2", "0.6000", "1", "1.00", "100"});
  CHECK(table.rows[2] ==
        Row{"c", "stopped", "single", "cpu", "fp32", "0.2", "0/2", "-", "-", "-", "-"});
  // A run still going (this process stands for it) shows its finished epochs.
  CHECK(table.rows[3] ==
        Row{"d", "running", "single", "cpu", "fp32", "0.2", "2/2", "0.3000", "1", "1.00", "100"});
  CHECK(table.records[1].at("test_acc") == 0.6);
  CHECK(table.records[2].at("test_acc").is_null());

  const std::string csv = runs::format_table(table, runs::TableFormat::kCsv);
  CHECK(csv.substr(0, csv.find('\n')) ==
        "run,state,backend,devices,precision,optimizer.lr,epochs,test_acc,best_epoch,sec/epoch,"
        "samples/s");
  CHECK(csv.find("\na,finished,ddp,\"cpu,cpu\",fp32,0.1,2/2,0.7000,2,3.00,33\n") !=
        std::string::npos);
  const std::string markdown = runs::format_table(table, runs::TableFormat::kMarkdown);
  CHECK(markdown.find("| b | preempted | single | cpu | fp32 | 0.2 | 1/2 |") != std::string::npos);

  // A line break inside a cell neither ends a markdown row nor a csv record (nor a line).
  runs::Table broken;
  broken.columns = {"run", "note"};
  broken.rows = {{"a", "one\ntwo|three"}};
  CHECK(runs::format_table(broken, runs::TableFormat::kMarkdown).find("| a | one two\\|three |") !=
        std::string::npos);
  CHECK(runs::format_table(broken, runs::TableFormat::kCsv) == "run,note\na,one\\x0atwo|three\n");
}

TEST_CASE("compare shows backend, devices and precision once, not again among the keys that differ",
          "[runs]") {
  TempDir dir;
  nlohmann::json ddp = config_with_lr(0.2);
  ddp["parallel"] = {{"backend", "ddp"}, {"devices", {"cpu", "cpu"}}};
  ddp["precision"] = "bf16";
  write_run(dir / "a", config_with_lr(0.1), {}, "running");
  write_run(dir / "b", ddp, {}, "running");
  const auto views = std::vector<run::RunView>{run::read_run(dir / "a"), run::read_run(dir / "b")};
  const runs::Table table = runs::compare_runs(views);
  CHECK(table.columns == std::vector<std::string>{"run", "state", "backend", "devices", "precision",
                                                  "optimizer.lr", "epochs", "test_acc",
                                                  "best_epoch", "sec/epoch", "samples/s"});
  using Row = std::vector<std::string>;
  CHECK(table.rows[1] ==
        Row{"b", "running", "ddp", "cpu,cpu", "bf16", "0.2", "0/2", "-", "-", "-", "-"});
  CHECK(table.records[1].at("differs") == nlohmann::json{{"optimizer.lr", "0.2"}});
  // Which keys differ is still every one of them.
  CHECK(runs::differing_keys(views) == std::vector<std::string>{"optimizer.lr", "parallel.backend",
                                                                "parallel.devices", "precision"});
}

TEST_CASE(
    "compare writes a run's text as text: no terminal code in any format, no formula in a csv "
    "cell",
    "[runs][security]") {
  TempDir dir;
  nlohmann::json hostile = config_with_lr(0.1);
  hostile["name"] = "\x1b]0;pwned\x07\r\x1b[KLooks fine: 0 errors\xc2\x9b";
  hostile["note"] = "=HYPERLINK(\"http://x\",\"y\")";
  hostile["neg"] = -0.5;
  write_run(dir / "a", config_with_lr(0.1), {}, "running");
  write_run(dir / "b", hostile, {}, "running");
  std::vector<run::RunView> views = {run::read_run(dir / "a"), run::read_run(dir / "b")};
  views[1].config["neg"] = -0.5;
  views[0].config["neg"] = -0.25;
  const runs::Table table = runs::compare_runs(views);
  for (const auto format : {runs::TableFormat::kText, runs::TableFormat::kMarkdown,
                            runs::TableFormat::kCsv, runs::TableFormat::kJson}) {
    const std::string out = runs::format_table(table, format);
    INFO(out);
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find('\x07') == std::string::npos);
    CHECK(out.find('\r') == std::string::npos);
    CHECK(out.find("\xc2\x9b") == std::string::npos);
  }
  const std::string text = runs::format_table(table, runs::TableFormat::kText);
  CHECK_THAT(text, ContainsSubstring("\\x1b]0;pwned\\x07\\x0d\\x1b[KLooks fine: 0 errors\\u009b"));
  const std::string csv = runs::format_table(table, runs::TableFormat::kCsv);
  CHECK_THAT(csv, ContainsSubstring(",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\","));
  CHECK_THAT(csv, ContainsSubstring(",-0.5,"));  // a number stays a number
  CHECK_THAT(csv, ContainsSubstring(",-,"));     // and "no value" stays itself
}

TEST_CASE("compare flattens each config once, and refuses a run file larger than any it writes",
          "[runs][security]") {
  TempDir dir;
  // Two configs of 20,000 keys that all differ: flattened once per key and run, as compare once
  // did, they took minutes; the test runs under a CPU limit a hundred times what once costs.
  nlohmann::json wide_a = config_with_lr(0.1), wide_b = config_with_lr(0.1);
  for (int i = 0; i < 20000; ++i) {
    wide_a["wide"]["k" + std::to_string(i)] = i;
    wide_b["wide"]["k" + std::to_string(i)] = -i - 1;
  }
  write_run(dir / "a", wide_a, {}, "running");
  write_run(dir / "b", wide_b, {}, "running");
  CHECK(testing::run_within_cpu_time(
            [&] {
              const auto table =
                  runs::compare_runs({run::read_run(dir / "a"), run::read_run(dir / "b")});
              if (table.columns.size() != 20000 + 10) throw std::logic_error("wrong columns");
            },
            20) == "returned");
  // A sparse metrics.jsonl of 2 GiB is refused by its size, unread.
  write_run(dir / "c", config_with_lr(0.1), {}, "running");
  std::filesystem::resize_file(dir / "c" / "metrics.jsonl", uint64_t{2} << 30);
  CHECK_THROWS_WITH(run::read_run(dir / "c"),
                    ContainsSubstring((dir / "c" / "metrics.jsonl").string() +
                                      ": 2147483648 bytes, more than the 16777216 any such file "
                                      "needs"));
}

TEST_CASE("compare names an argument that holds no run, and reads quoted globs", "[runs]") {
  TempDir dir;
  std::filesystem::create_directories(dir / "empty");
  CHECK_THROWS_WITH(run::find_runs({(dir / "empty").string()}),
                    ContainsSubstring("holds no run folder"));
  write_run(dir / "r1", config_with_lr(0.1), {}, "running");
  write_run(dir / "r2", config_with_lr(0.1), {}, "running");
  write_run(dir / "s" / "10", config_with_lr(0.1), {}, "running");
  write_run(dir / "s" / "2", config_with_lr(0.1), {}, "running");
  CHECK(run::find_runs({(dir / "r*").string()}) ==
        std::vector<std::filesystem::path>{dir / "r1", dir / "r2"});
  // A sweep's points by number: 2 before 10, numbers before other names.
  write_run(dir / "s" / "1a", config_with_lr(0.1), {}, "running");
  CHECK(run::find_runs({(dir / "s").string()}) ==
        std::vector<std::filesystem::path>{dir / "s" / "2", dir / "s" / "10", dir / "s" / "1a"});
  // A run named twice is one row.
  CHECK(run::find_runs(
            {(dir / "r1").string(), (dir / "r1").string() + "/", (dir / "." / "r1").string()}) ==
        std::vector<std::filesystem::path>{dir / "r1"});
}

TEST_CASE("compare refuses, naming the folder, run files of another kind or shape", "[runs]") {
  TempDir dir;
  // A pipe where summary.json belongs is refused at once rather than waited on.
  write_run(dir / "fifo", config_with_lr(0.1), {}, "running");
  REQUIRE(::mkfifo((dir / "fifo" / "summary.json").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(
      run::read_run(dir / "fifo"),
      ContainsSubstring((dir / "fifo" / "summary.json").string() + ": is no regular file"));
  // Valid JSON of the wrong shape: a run's folder named, not a JSON library's message alone.
  write_run(dir / "shape", nlohmann::json{{"parallel", 3}}, {}, "running");
  const auto view = run::read_run(dir / "shape");
  CHECK_THROWS_WITH(
      runs::compare_runs({view}),
      ContainsSubstring((dir / "shape").string() + ": not a run folder dptrain wrote"));
}

TEST_CASE("a grid in Hydra's spelling: values with commas in brackets, first axis slowest",
          "[runs]") {
  const auto devices = runs::parse_grid_axis(R"(parallel.devices=["cpu","cpu"],cpu)");
  CHECK(devices.key == "parallel.devices");
  CHECK(devices.values == std::vector<std::string>{R"(["cpu","cpu"])", "cpu"});
  const auto points = runs::grid_points({runs::parse_grid_axis("optimizer.lr=0.05,0.1,0.2"),
                                         runs::parse_grid_axis("data.batch_size=256,512")});
  REQUIRE(points.size() == 6);
  CHECK(points[0] == std::vector<std::string>{"optimizer.lr=0.05", "data.batch_size=256"});
  CHECK(points[1] == std::vector<std::string>{"optimizer.lr=0.05", "data.batch_size=512"});
  CHECK(points[5] == std::vector<std::string>{"optimizer.lr=0.2", "data.batch_size=512"});
  for (const std::string bad : {"optimizer.lr", "=1,2", "optimizer.lr=1,,2", "a=[1,2"}) {
    INFO(bad);
    CHECK_THROWS_AS(runs::parse_grid_axis(bad), core::Error);
  }
}
