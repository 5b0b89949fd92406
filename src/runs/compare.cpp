#include "runs/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "config/json_text.h"
#include "core/error.h"
#include "core/terminal.h"

namespace dptrain::runs {
namespace {

// A config's leaves by dotted key ("optimizer.lr"), each as text.
using Leaves = std::map<std::string, std::string>;

void flatten(const nlohmann::json& j, const std::string& path, Leaves& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [key, value] : j.items()) {
      flatten(value, path.empty() ? key : path + "." + key, out);
    }
  } else if (!path.empty()) {
    out[path] = j.is_string() ? j.get<std::string>() : j.dump();
  }
}

Leaves leaves_of(const nlohmann::json& config) {
  Leaves leaves;
  flatten(config, "", leaves);
  return leaves;
}

std::string value_at(const Leaves& leaves, const std::string& key) {
  const auto it = leaves.find(key);
  return it == leaves.end() ? "-" : it->second;
}

// The keys whose values are not the same in every run (missing from some counts as differing).
std::vector<std::string> keys_that_differ(const std::vector<Leaves>& leaves) {
  std::map<std::string, int> seen;
  for (const auto& run : leaves) {
    for (const auto& [key, value] : run) ++seen[key];
  }
  std::vector<std::string> keys;
  for (const auto& [key, count] : seen) {
    bool same = count == static_cast<int>(leaves.size());
    for (size_t i = 1; same && i < leaves.size(); ++i) {
      same = value_at(leaves[i], key) == value_at(leaves[0], key);
    }
    if (!same) keys.push_back(key);
  }
  return keys;
}

std::string joined(const nlohmann::json& devices) {
  if (!devices.is_array()) return devices.is_string() ? devices.get<std::string>() : "-";
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ",") + d.get<std::string>();
  return out;
}

double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || !it->is_number() ? 0.0 : it->get<double>();
}

// What a run measured so far, from its finished epochs (summary.json's figures are the same for
// a finished run, but an unfinished one has only these).
struct Figures {
  nlohmann::json test_acc;    // the last epoch's, or the restored best epoch's when finished
  nlohmann::json best_epoch;  // early stopping's, else the epoch of the highest test accuracy
  nlohmann::json sec_per_epoch;
  nlohmann::json samples_per_sec;
};

Figures figures_of(const run::RunView& run) {
  Figures f;
  double train_sec = 0, samples = 0, best = -1;
  for (const auto& e : run.epochs) {
    train_sec += number(e, "train_sec");
    samples += number(e, "train_samples");
    if (number(e, "test_acc") > best) {
      best = number(e, "test_acc");
      f.best_epoch = e.value("epoch", 0);
    }
  }
  if (!run.epochs.empty()) {
    f.test_acc = number(run.epochs.back(), "test_acc");
    f.sec_per_epoch = train_sec / static_cast<double>(run.epochs.size());
    if (train_sec > 0) f.samples_per_sec = samples / train_sec;
  }
  if (run.finished()) {
    f.test_acc = number(*run.summary, "test_acc");
    if (run.summary->value("best_epoch", nlohmann::json()).is_number()) {
      f.best_epoch = run.summary->at("best_epoch");
    }
  }
  return f;
}

std::string shown(const nlohmann::json& v, const char* format) {
  if (v.is_null()) return "-";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return fmt::format(fmt::runtime(format), v.get<double>());
}

// A spreadsheet takes a cell that begins with = + - @ (or a tab or carriage return before one)
// as a formula, which can run commands or send data away (CWE-1236). Such a cell that is not a
// number is written behind a ' , as OWASP advises, so it shows as the text it is.
bool looks_like_formula(const std::string& cell) {
  if (cell.empty() || std::string_view("=+-@\t\r").find(cell[0]) == std::string_view::npos) {
    return false;
  }
  if (cell == "-") return false;  // the table's "no value"
  char* end = nullptr;
  std::strtod(cell.c_str(), &end);
  return end != cell.c_str() + cell.size();
}

std::string csv_cell(const std::string& raw) {
  // Line breaks spelled out too: a cell printed to a terminal must not start a line of its own.
  const std::string cell = (looks_like_formula(raw) ? "'" : "") + core::printable(raw);
  if (cell.find_first_of(",\"'") == std::string::npos) return cell;
  std::string quoted = "\"";
  for (char c : cell) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string markdown_cell(const std::string& raw) {
  const std::string cell = core::printable(raw, core::LineBreaks::kKeep);
  std::string out;
  for (const char c : cell) {  // a line break would end the table's row
    out += c == '|' ? std::string("\\|") : c == '\n' || c == '\r' ? " " : std::string(1, c);
  }
  return out;
}

}  // namespace

std::vector<std::string> differing_keys(const std::vector<run::RunView>& runs) {
  std::vector<Leaves> leaves;
  for (const auto& run : runs) leaves.push_back(leaves_of(run.config));
  return keys_that_differ(leaves);
}

std::vector<std::string> run_names(const std::vector<run::RunView>& runs) {
  std::vector<std::vector<std::string>> parts;
  for (const auto& run : runs) {
    std::vector<std::string> p;
    for (const auto& part : run.dir.lexically_normal()) {
      if (!part.empty() && part != ".") p.push_back(part.string());
    }
    parts.push_back(p);
  }
  // Leading folders every run has, keeping at least the last part of each (a lone run: its
  // folder's name).
  size_t shared = parts.size() == 1 && !parts[0].empty() ? parts[0].size() - 1 : 0;
  for (bool same = runs.size() > 1; same; ++shared) {
    for (const auto& p : parts)
      same = same && shared + 1 < p.size() && p[shared] == parts[0][shared];
    if (!same) break;
  }
  std::vector<std::string> names;
  for (const auto& p : parts) {
    std::string name;
    for (size_t i = p.empty() ? 0 : std::min(shared, p.size() - 1); i < p.size(); ++i) {
      name += (name.empty() ? "" : "/") + p[i];
    }
    names.push_back(name);
  }
  return names;
}

namespace {

// One run's row and JSON record; `leaves` are its config's.
void add_run(Table& table, const run::RunView& run, const Leaves& leaves, const std::string& name,
             const std::vector<std::string>& keys) {
  const nlohmann::json& s = run.summary ? *run.summary : nlohmann::json::object();
  const nlohmann::json parallel = run.config.value("parallel", nlohmann::json::object());
  nlohmann::json record = {
      {"run", name},
      {"path", run.dir.string()},
      {"state", run.state},
      {"backend", s.value("backend", parallel.value("backend", "-"))},
      {"devices", s.contains("devices") ? joined(s["devices"])
                                        : joined(parallel.value("devices", nlohmann::json()))},
      {"precision", s.value("precision", run.config.value("precision", "-"))}};
  std::vector<std::string> row = {name, run.state, record["backend"].get<std::string>(),
                                  record["devices"].get<std::string>(),
                                  record["precision"].get<std::string>()};
  record["differs"] = nlohmann::json::object();
  for (const auto& key : keys) {
    record["differs"][key] = value_at(leaves, key);
    row.push_back(value_at(leaves, key));
  }
  const Figures f = figures_of(run);
  const auto planned = run.config.value("train", nlohmann::json::object()).value("epochs", 0);
  record["epochs_done"] = run.epochs.size();
  record["epochs"] = planned;
  record["test_acc"] = f.test_acc;
  record["best_epoch"] = f.best_epoch;
  record["sec_per_epoch"] = f.sec_per_epoch;
  record["samples_per_sec"] = f.samples_per_sec;
  row.push_back(std::to_string(run.epochs.size()) + "/" + std::to_string(planned));
  row.push_back(shown(f.test_acc, "{:.4f}"));
  row.push_back(shown(f.best_epoch, "{}"));
  row.push_back(shown(f.sec_per_epoch, "{:.2f}"));
  row.push_back(shown(f.samples_per_sec, "{:.0f}"));
  table.rows.push_back(std::move(row));
  table.records.push_back(std::move(record));
}

}  // namespace

Table compare_runs(const std::vector<run::RunView>& runs) {
  // Each config is flattened once: a config of many keys, once per key that differs, would cost
  // the square of its size.
  std::vector<Leaves> leaves;
  for (const auto& run : runs) leaves.push_back(leaves_of(run.config));
  // The keys with columns of their own (what the run used, summary.json's when it finished) are
  // not shown again among those that differ.
  std::vector<std::string> keys = keys_that_differ(leaves);
  keys.erase(std::remove_if(keys.begin(), keys.end(),
                            [](const std::string& key) {
                              return key == "parallel.backend" || key == "parallel.devices" ||
                                     key == "precision";
                            }),
             keys.end());
  const std::vector<std::string> names = run_names(runs);
  Table table;
  table.columns = {"run", "state", "backend", "devices", "precision"};
  table.columns.insert(table.columns.end(), keys.begin(), keys.end());
  for (const char* c : {"epochs", "test_acc", "best_epoch", "sec/epoch", "samples/s"}) {
    table.columns.emplace_back(c);
  }
  table.records = nlohmann::json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    try {
      add_run(table, runs[i], leaves[i], names[i], keys);
    } catch (const nlohmann::json::exception& e) {  // valid JSON of another shape
      throw core::Error(
          core::ErrorCode::kIo,
          runs[i].dir.string() + ": not a run folder dptrain wrote: " + config::plain_json_error(e),
          "leave it out of the list");
    }
  }
  return table;
}

std::string format_table(const Table& table, TableFormat format) {
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells, auto cell, const char* open,
                        const char* sep, const char* close) {
    out += open;
    for (size_t c = 0; c < cells.size(); ++c) out += (c ? sep : "") + cell(c, cells[c]);
    out += close;
    out += "\n";
  };
  switch (format) {
    case TableFormat::kJson:  // every character past ASCII as \uXXXX, C1 controls among them
      return table.records.dump(2, ' ', /*ensure_ascii=*/true) + "\n";
    case TableFormat::kCsv: {
      const auto cell = [](size_t, const std::string& s) { return csv_cell(s); };
      line(table.columns, cell, "", ",", "");
      for (const auto& row : table.rows) line(row, cell, "", ",", "");
      return out;
    }
    case TableFormat::kMarkdown: {
      const auto cell = [](size_t, const std::string& s) { return markdown_cell(s); };
      line(table.columns, cell, "| ", " | ", " |");
      line(std::vector<std::string>(table.columns.size(), "---"), cell, "| ", " | ", " |");
      for (const auto& row : table.rows) line(row, cell, "| ", " | ", " |");
      return out;
    }
    case TableFormat::kText: {
      // Every cell as printable() writes it, before widths are measured.
      auto columns = table.columns;
      auto rows = table.rows;
      for (auto& column : columns) column = core::printable(column);
      for (auto& row : rows) {
        for (auto& cell : row) cell = core::printable(cell);
      }
      std::vector<size_t> width(columns.size());
      for (size_t c = 0; c < width.size(); ++c) {
        width[c] = columns[c].size();
        for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
      }
      const auto cell = [&](size_t c, const std::string& s) {
        return c + 1 == width.size() ? s : s + std::string(width[c] - s.size(), ' ');
      };
      line(columns, cell, "", "  ", "");
      for (const auto& row : rows) line(row, cell, "", "  ", "");
      return out;
    }
  }
  return out;
}

}  // namespace dptrain::runs
