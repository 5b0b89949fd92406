// dptrain's entry: parse the command line, resolve the experiment, set up logging, run. The one
// place that catches every error: it logs what went wrong and a hint, and picks the exit status.
#include <spdlog/spdlog.h>

#include <iostream>

#include "app/commands.h"
#include "cli/cli.h"
#include "config/schema.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/stdout_check.h"
#include "core/torch_info.h"
#include "data/locate.h"
#include "kernels/kernel_isa.h"

namespace {

using namespace dptrain;

// Where the default lookup finds a data set (none: not found); scripts read `info` for it instead
// of repeating the rule.
std::optional<std::string> data_dir(const std::string& dataset) {
  try {
    return data::locate_data_dir("", dataset).string();
  } catch (const core::Error&) {
    return std::nullopt;
  }
}

void print_info(bool json) {
  const core::TorchInfo info = core::torch_info();
  const kernels::KernelIsa isa = kernels::kernel_isa();
  const std::optional<std::string> data = data_dir("fashion-mnist");
  if (json) {
    nlohmann::json j = core::to_json(info);
    j["kernel_isa"] = {{"level", isa.level}, {"chosen", isa.chosen}, {"runs_here", isa.runs_here}};
    j["data"] = {{"fashion-mnist", data ? nlohmann::json(*data) : nlohmann::json()}};
    // A data path need not be UTF-8: such bytes become U+FFFD.
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return;
  }
  std::cout << core::format_torch_info(info) << "cpu kernels: dptrain's " << isa.level << " ("
            << isa.chosen << (isa.runs_here ? "" : "; this CPU lacks it") << "), ATen's "
            << info.aten_cpu_capability << "\n"
            << "data fashion-mnist: " << data.value_or("not found (see data/README.md)") << "\n";
}

int run(const cli::Command& command, const std::vector<std::string>& argv) {
  // Training and sweeps release the signals held since main once their handlers are in
  // (train_command.cpp, sweep_command.cpp); everything else takes their default actions, now.
  if (command.action != cli::Action::kTrain && command.action != cli::Action::kSweep) {
    core::release_launcher_signals();
  }
  if (command.action != cli::Action::kInfo || command.summary_model) kernels::require_kernel_isa();
  switch (command.action) {
    case cli::Action::kInfo:
      if (command.summary_model) return app::print_model_summary(*command.summary_model);
      print_info(command.json);
      return 0;
    case cli::Action::kConfig:
      if (command.list_keys) {
        std::cout << config::key_table_markdown();
      } else {
        // Every character past ASCII as \uXXXX: the experiment file's text reaches a terminal.
        std::cout << config::to_json(app::resolve(command)).dump(2, ' ', /*ensure_ascii=*/true)
                  << std::endl;
      }
      return 0;
    case cli::Action::kTrain:
      return app::run_train(command, argv);
    case cli::Action::kEvaluate:
      return app::run_evaluate(command, argv);
    case cli::Action::kPredict:
      return app::run_predict(command);
    case cli::Action::kPreview:
      return app::run_preview(command);
    case cli::Action::kCompare:
      return app::run_compare(command);
    case cli::Action::kSweep:
      return app::run_sweep(command);
  }
  return 0;
}

// Every command's way out: results that never reached stdout fail the command (exit 5), whatever
// it returned; an error's own status stands.
int finish(int status) {
  const std::optional<std::string> problem = core::stdout_problem();
  if (!problem) return status;
  if (!spdlog::get("dptrain")) core::init_logging("info");  // help and usage errors end before it
  spdlog::error("{}: {}: the results could not all be written",
                core::code_name(core::ErrorCode::kIo), *problem);
  spdlog::error("hint: write them to a file system with room, or to a pipe");
  return status == 0 ? core::exit_status(core::ErrorCode::kIo) : status;
}

}  // namespace

int main(int argc, char** argv) {
  core::hold_launcher_signals();  // until train's handlers are in, or run() lets them act
  core::check_stdout_writes();
  core::keep_freed_memory_for_reuse();
  const cli::ParseResult parsed = cli::parse_command_line(argc, argv);
  if (!parsed.command) return finish(parsed.exit_status);
  try {
    core::init_logging("info");
    return finish(run(*parsed.command, std::vector<std::string>(argv, argv + argc)));
  } catch (const core::Error& e) {
    spdlog::error("{}: {}", core::code_name(e.code()), e.what());
    if (!e.hint().empty()) spdlog::error("hint: {}", e.hint());
    return finish(core::exit_status(e.code()));
  } catch (const c10::Error& e) {
    spdlog::error("LibTorch error: {}", e.what_without_backtrace());
    return finish(core::exit_status(core::ErrorCode::kRuntime));
  } catch (const std::exception& e) {
    spdlog::error("unexpected error: {}", e.what());
    return finish(core::exit_status(core::ErrorCode::kRuntime));
  }
}
