// One function per subcommand, each a few steps over library code; main.cpp dispatches to them
// and is the only place that catches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "config/config.h"

namespace dptrain::app {

int run_train(const cli::Command& command, const std::vector<std::string>& argv);
int run_evaluate(const cli::Command& command, const std::vector<std::string>& argv);
int run_predict(const cli::Command& command);
int run_preview(const cli::Command& command);
int run_compare(const cli::Command& command);
int run_sweep(const cli::Command& command);
// info --model NAME: the network's summary on stdout.
int print_model_summary(const std::string& name);

// A usage error (exit status 2) with its hint.
[[noreturn]] void usage_error(const std::string& what, const std::string& hint);

// The experiment the command names (its --config and --set, then -q or -v), resolved.
config::Config resolve(const cli::Command& command);

// For evaluate and predict: the experiment of the model file's own run (the config inside a
// checkpoint, else the config.json beside a model.pt; the defaults when neither is there), with
// this machine's parallel.*, runtime.* and log.* defaults; or --config's, whole. --set, -q and -v
// go over it. `source` says which, for the start line.
config::Config resolve_for_model(const cli::Command& command, std::string& source);

// A model file named on the command line (--model, --init-from), looked at before the experiment
// is chosen or the data read: an I/O error naming it when it is missing, a folder or unreadable.
void check_model_file(const std::filesystem::path& path);

// What the launched ranks do: training may restart them (parallel.max_restarts); evaluation
// ignores the training-only keys of the experiment it reads.
enum class Purpose { kTrain, kEvaluate };

// ddp with no launcher around and more than one local rank (or machine): this process launches
// the ranks, each running the same command line, and returns the job's exit status. Nothing
// when this process should do the work itself.
std::optional<int> launch_ranks_if_needed(const cli::Command& command, const config::Config& config,
                                          const std::vector<std::string>& argv, Purpose purpose);

}  // namespace dptrain::app
