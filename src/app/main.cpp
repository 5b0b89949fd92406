// dptrain's entry: parse the command line, resolve the experiment, set up logging, run. The one
// place that catches every error: it logs what went wrong and a hint, and picks the exit status.
#include <spdlog/spdlog.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "config/load.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/torch_info.h"
#include "data/locate.h"
#include "model/registry.h"
#include "train/run_dir.h"
#include "train/trainer.h"

namespace {

using namespace dptrain;

config::Config resolve(const cli::Command& command) {
  return config::load_config(command.config_file, command.overrides, model::model_names());
}

// Where the default lookup finds a data set; scripts read this line instead of repeating the rule.
std::string data_line(const std::string& dataset) {
  std::string where;
  try {
    where = data::locate_data_dir("", dataset).string();
  } catch (const core::Error&) {
    where = "not found (see data/README.md)";
  }
  return "data " + dataset + ": " + where + "\n";
}

int run(const cli::Command& command) {
  switch (command.action) {
    case cli::Action::kInfo:
      std::cout << core::format_torch_info(core::torch_info()) << data_line("fashion-mnist");
      return 0;
    case cli::Action::kConfig:
      std::cout << config::to_json(resolve(command)).dump(2) << std::endl;
      return 0;
    case cli::Action::kTrain: {
      const config::Config config = resolve(command);
      core::init_logging(config.log.level);
      core::install_interrupt_handler();
      const auto output = train::make_run_dir(command.output_dir, config.name, command.overwrite);
      train::train(config, output, std::cout);
      return 0;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const cli::ParseResult parsed = cli::parse_command_line(argc, argv);
  if (!parsed.command) return parsed.exit_status;
  try {
    core::init_logging("info");
    return run(*parsed.command);
  } catch (const core::Error& e) {
    spdlog::error("{}: {}", core::code_name(e.code()), e.what());
    if (!e.hint().empty()) spdlog::error("hint: {}", e.hint());
    return core::exit_status(e.code());
  } catch (const c10::Error& e) {
    spdlog::error("LibTorch error: {}", e.what_without_backtrace());
    return core::exit_status(core::ErrorCode::kRuntime);
  } catch (const std::exception& e) {
    spdlog::error("unexpected error: {}", e.what());
    return core::exit_status(core::ErrorCode::kRuntime);
  }
}
