// `dptrain compare`'s table: a row per run with what it was (backend, devices, precision and the
// config keys whose values differ between the runs) and what it measured (test accuracy, best
// epoch, sec/epoch, samples/s), in plain text, Markdown, CSV or JSON. A run not finished shows
// its state and the figures of its finished epochs, never a final result it does not have.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/reader.h"

namespace dptrain::runs {

enum class TableFormat { kText, kMarkdown, kCsv, kJson };

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // cells as shown; "-" where a run has none
  nlohmann::json records;                      // the same, a JSON object per run, numbers raw
};

// The leaf keys ("optimizer.lr") whose values are not the same in every run's config.json.
std::vector<std::string> differing_keys(const std::vector<run::RunView>& runs);

// Runs' names: their paths without the folders that all of them share.
std::vector<std::string> run_names(const std::vector<run::RunView>& runs);

Table compare_runs(const std::vector<run::RunView>& runs);

std::string format_table(const Table& table, TableFormat format);

}  // namespace dptrain::runs
