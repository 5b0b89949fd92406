// dptrain compare RUN...: the runs' table on stdout, and their curves with --plot.
#include <iostream>

#include "app/commands.h"
#include "run/reader.h"
#include "runs/compare.h"
#include "runs/plot.h"

namespace dptrain::app {

int run_compare(const cli::Command& command) {
  std::vector<run::RunView> views;
  for (const auto& dir : run::find_runs(command.runs)) views.push_back(run::read_run(dir));
  const runs::Table table = runs::compare_runs(views);
  const runs::TableFormat format = command.format == "markdown" ? runs::TableFormat::kMarkdown
                                   : command.format == "csv"    ? runs::TableFormat::kCsv
                                   : command.format == "json"   ? runs::TableFormat::kJson
                                                                : runs::TableFormat::kText;
  std::cout << runs::format_table(table, format) << std::flush;
  if (command.plot_file) runs::plot_runs(views, runs::run_names(views), *command.plot_file);
  return 0;
}

}  // namespace dptrain::app
