// The command line: CLI11 fills a plain Command and nothing below the app sees CLI11.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dptrain::cli {

enum class Action { kTrain, kEvaluate, kPredict, kPreview, kConfig, kInfo, kCompare, kSweep };

// dptrain's own launch of ddp ranks over several machines without a scheduler, as torchrun's
// options of the same names.
struct MultiNode {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 0;  // 0: a free port (one machine only)
  bool given = false;   // any of the four was on the command line
};

// -q: warnings, errors and the results; -v: debug lines too. Each sets log.level (last wins
// over --set).
enum class Verbosity { kDefault, kQuiet, kVerbose };

struct Command {
  Action action = Action::kTrain;
  Verbosity verbosity = Verbosity::kDefault;
  std::optional<std::filesystem::path> config_file;  // none: the default experiment
  std::vector<std::string> overrides;                // "key.path=value"
  std::optional<std::filesystem::path> output_dir;   // none: runs/<name>/<timestamp>
  bool overwrite = false;
  std::optional<std::string> resume;  // a checkpoint's path, or "auto"
  std::optional<int> max_restarts;    // dptrain's launcher: overrides parallel.max_restarts
  MultiNode nodes;
  bool list_keys = false;  // config --keys: the key table instead of the resolved experiment
  std::optional<std::filesystem::path> init_from;  // train: weights to start from

  // evaluate and predict
  std::filesystem::path model_file;                  // a state_dict (model.pt) or a checkpoint
  std::string split = "test";                        // evaluate: "test" or "val"
  std::optional<std::filesystem::path> report_file;  // evaluate --output: the report as JSON
  std::vector<std::filesystem::path> inputs;         // predict: IDX, PNG or PGM files
  std::optional<int64_t> index;                      // predict: one image of each IDX file
  int top = 3;                                       // predict: classes shown per image
  bool json = false;  // predict: a JSON object per image; info: one JSON object
  std::optional<std::string> summary_model;  // info --model: a network's summary instead

  // preview (with config_file, overrides and output_dir: the folder it writes into)
  struct Preview {
    std::string split = "train";  // train, val or test
    int64_t count = 16;           // samples from the split's first
    int64_t epoch = 1;            // whose random draws, from 1 as the console counts
  } preview;

  // compare
  std::vector<std::string> runs;  // run folders, folders above them, or globs
  std::string format = "text";    // text, markdown, csv or json
  std::optional<std::filesystem::path> plot_file;

  // sweep (with config_file, overrides, output_dir and index: the point to run alone)
  std::vector<std::string> grid;  // "key=v1,v2"
  bool list_points = false;
  int jobs = 1;
};

struct ParseResult {
  std::optional<Command> command;  // none: help, version or a usage error was already printed
  int exit_status = 0;
};

ParseResult parse_command_line(int argc, const char* const* argv);

}  // namespace dptrain::cli
