// `dptrain evaluate`: a model file on the experiment's test (or validation) set, on the
// experiment's backend; rank 0 prints the report and writes it as JSON when asked.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <system_error>

#include "app/commands.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "launch/environment.h"
#include "train/evaluate_model.h"

namespace dptrain::app {
namespace {

// The files the command names, looked at before the experiment is chosen and the data set read: a
// missing model was otherwise found only after the whole test set had been loaded (and the
// experiment taken for the defaults, with no config.json beside it), and a report's missing
// folder after the evaluation.
void check_named_files(const cli::Command& command) {
  check_model_file(command.model_file);
  if (!command.report_file) return;
  std::error_code ec;
  const std::filesystem::path folder = command.report_file->parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec)) {
    throw core::Error(core::ErrorCode::kIo,
                      command.report_file->string() + ": no folder " + folder.string(),
                      "create it first, or give --output a file in a folder that exists");
  }
}

}  // namespace

int run_evaluate(const cli::Command& command, const std::vector<std::string>& argv) {
  check_named_files(command);
  std::string source;
  const config::Config config = resolve_for_model(command, source);
  if (auto status = launch_ranks_if_needed(command, config, argv, Purpose::kEvaluate)) {
    return *status;
  }
  const launch::RankInfo rank =
      launch::detect_launcher(launch::process_environment()).value_or(launch::RankInfo{});
  core::init_logging(config::name_of(config.log.level), rank.rank);
  spdlog::info("evaluating {} on its {} set in batches of {}, with the experiment of {}",
               command.model_file.string(), command.split, config.data.batch_size, source);
  const train::Split split = command.split == "val" ? train::Split::kVal : train::Split::kTest;
  const train::ModelEvaluation evaluation =
      train::evaluate_model_file(config, rank, command.model_file, split);
  if (rank.rank != 0) return 0;
  const train::EvalResult& result = evaluation.result;
  const std::vector<std::string>& classes = evaluation.classes;
  std::cout << train::format_evaluation(result, classes, command.split) << std::flush;
  if (command.report_file) {
    const auto report = train::evaluation_json(result, classes, command.split, command.model_file);
    core::write_file_atomic(  // a model path need not be UTF-8: such bytes become U+FFFD
        *command.report_file,
        report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    spdlog::info("report written to {}", command.report_file->string());
  }
  return 0;
}

}  // namespace dptrain::app
