#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <iostream>
#include <string_view>

#include "cli/generated_docs.h"
#include "cli/suggest.h"
#include "config/schema.h"

namespace dptrain::cli {
namespace {

constexpr const char* kSetNote =
    "A --set value is read as JSON when it parses (3, true, [\"cpu\"], \"text\"), else as a "
    "string. `dptrain config --keys` lists every key.";

constexpr const char* kOverview = R"(Examples:
  dptrain train                                   d2l's LeNet on Fashion-MNIST, best device
  dptrain train --config configs/ddp_cpu.json --set train.epochs=2 --output runs/try
  dptrain evaluate --model runs/try/model.pt
  dptrain compare runs/d2l-lenet/*
  dptrain sweep --grid optimizer.lr=0.05,0.1,0.2 --grid data.batch_size=256,512
  dptrain help train                              a subcommand's options and examples)";

constexpr const char* kTrainExamples = R"(Examples:
  dptrain train                                   d2l's LeNet on Fashion-MNIST, best device
  dptrain train --config configs/d2l.json --set train.epochs=2 --output runs/try
  dptrain train --set parallel.devices='["cpu"]' --set runtime.threads=2
  dptrain train --config configs/ddp_cpu.json       ddp: one process per device, launched here
  dptrain train --output runs/try --resume auto     go on from the run's newest checkpoint
  dptrain train --init-from runs/try/model.pt -q    other weights to start from; quiet
  torchrun --nproc_per_node 2 --redirects 9:0 --tee 9:0 --no_python \
      dptrain train --config configs/ddp_cpu.json  under torchrun (1.13's spelling, 2.x's too))";

constexpr const char* kEvaluateExamples = R"(Examples:
  dptrain evaluate --model runs/X/model.pt          with the run's experiment (runs/X/config.json)
  dptrain evaluate --model runs/X/checkpoints/epoch-0003.pt --split val  data.val_split's samples
  dptrain evaluate --model model.pt --config configs/d2l.json --output report.json)";

constexpr const char* kPredictExamples = R"(Examples:
  dptrain predict --model runs/X/model.pt --index 0 t10k-images-idx3-ubyte.gz
  dptrain predict --model runs/X/model.pt --json shoe.png bag.pgm)";

constexpr const char* kPreviewExamples = R"(Examples:
  dptrain preview --config configs/d2l.json         the first 16 training samples, as trained
  dptrain preview --config configs/d2l.json --split test --count 64 --output look
  dptrain preview --set data.dataset=folder --set data.dir=pictures --epoch 3    epoch 3's draws)";

constexpr const char* kConfigExamples = R"(Examples:
  dptrain config --config configs/cpu_smoke.json    print the resolved experiment
  dptrain config --set optimizer.lr=0.1             the defaults with one change
  dptrain config --keys                             every key: type, default, values, meaning)";

constexpr const char* kCompareExamples = R"(Examples:
  dptrain compare runs/d2l-lenet/*                  every run of an experiment, side by side
  dptrain compare runs/a runs/b --format markdown   a table for a report (or csv, json)
  dptrain compare runs/sweep-7 --plot sweep.svg     a sweep's points, and their curves)";

constexpr const char* kSweepExamples = R"(Examples:
  dptrain sweep --grid optimizer.lr=0.05,0.1,0.2 --grid data.batch_size=256,512
  dptrain sweep --config configs/cpu_smoke.json --grid optimizer.lr=0.1,0.2 --jobs 2
  dptrain sweep --grid optimizer.lr=0.05,0.1 --list    the points and their indices
  dptrain sweep --grid optimizer.lr=0.05,0.1 --index 1 --output runs/sweep-7   one point
  dptrain sweep --grid 'optimizer.lr=range(0.05,0.25,0.05)' --grid 'data.batch_size=choice(256,512)'
  sbatch --array=0-5 scripts/slurm/sweep.sbatch --grid optimizer.lr=0.05,0.1,0.2 ...)";

constexpr const char* kInfoExamples = R"(Examples:
  dptrain info                                      versions, devices, threads, data
  dptrain info --json                               the same for scripts
  dptrain info --model resnet18                     a network's layers, sizes and FLOPs)";

std::string with_note(const char* examples) {
  return std::string(examples) + "\n" + kSetNote;
}

void add_common_options(CLI::App& sub, Command& command) {
  auto* quiet = sub.add_flag_callback(
      "-q,--quiet", [&command] { command.verbosity = Verbosity::kQuiet; },
      "only warnings, errors and the results (log.level warn)");
  auto* verbose = sub.add_flag_callback(
      "-v,--verbose", [&command] { command.verbosity = Verbosity::kVerbose; },
      "debug lines too (log.level debug)");
  quiet->excludes(verbose);
  // Mistakes are answered with the closest option or a --set spelling (unknown_arguments below).
  sub.allow_extras();
}

void add_experiment_options(CLI::App& sub, Command& command) {
  // No CLI11 check that the file exists: a missing one is a config error of load_config's, as a
  // file that is no JSON is, in main's words and with its exit status.
  sub.add_option("-c,--config", command.config_file, "experiment file (JSON)");
  // One value per --set for CLI11: split_set_pairs gives each pair of "--set a=1 b=2" its own.
  sub.add_option("-s,--set", command.overrides,
                 "override a key: key.path=value (repeatable; one --set takes several pairs)")
      ->allow_extra_args(false);
}

void add_node_options(CLI::App& sub, MultiNode& nodes) {
  const char* group = "ddp over several machines (without torchrun, srun or mpirun)";
  sub.add_option("--nnodes", nodes.nnodes, "machines taking part (default 1)")
      ->check(CLI::Range(1, 65536))
      ->group(group);
  sub.add_option("--node-rank", nodes.node_rank, "this machine's index, from 0")
      ->check(CLI::NonNegativeNumber)
      ->group(group);
  sub.add_option("--master-addr", nodes.master_addr, "the address of machine 0")->group(group);
  sub.add_option("--master-port", nodes.master_port, "the rendezvous port on machine 0")
      ->check(CLI::Range(1, 65535))
      ->group(group);
}

CLI::App* add_train(CLI::App& app, Command& command) {
  CLI::App* train = app.add_subcommand("train", "train a model as an experiment file says");
  train->footer(with_note(kTrainExamples));
  add_experiment_options(*train, command);
  train->add_option("-o,--output", command.output_dir,
                    "output folder (default: runs/<name>/<timestamp>)");
  train->add_flag("--overwrite", command.overwrite,
                  "allow an --output folder that already holds a run's results");
  train->add_option("--resume", command.resume,
                    "go on from a checkpoint: its path, or auto (the newest in the --output "
                    "folder's checkpoints, if any)");
  train->add_option("--init-from", command.init_from,
                    "start from these weights instead of the seeded initialisation: a model.pt, a "
                    "checkpoint, or Python's torch.save(net.state_dict(), path)");
  add_node_options(*train, command.nodes);
  train
      ->add_option("--max-restarts", command.max_restarts,
                   "ddp under dptrain's launcher: when a rank fails, start every rank again from "
                   "the newest checkpoint, up to N times (as torchrun's --max_restarts; default: "
                   "parallel.max_restarts)")
      ->check(CLI::Range(0, 1000));
  return train;
}

CLI::App* add_evaluate(CLI::App& app, Command& command) {
  CLI::App* evaluate = app.add_subcommand(
      "evaluate", "evaluate a model.pt or checkpoint: loss, accuracy, per class, confusion");
  evaluate->footer(with_note(kEvaluateExamples));
  evaluate->add_option("-m,--model", command.model_file, "a model.pt or a checkpoint")->required();
  add_experiment_options(*evaluate, command);
  evaluate
      ->add_option("--split", command.split,
                   "test, or val (the experiment's data.val_split and seed)")
      ->check(CLI::IsMember({"test", "val"}));
  evaluate->add_option("-o,--output", command.report_file, "also write the report here (JSON)");
  return evaluate;
}

CLI::App* add_predict(CLI::App& app, Command& command) {
  CLI::App* predict =
      app.add_subcommand("predict", "classify images with a model.pt or checkpoint");
  predict->footer(with_note(kPredictExamples));
  predict->add_option("-m,--model", command.model_file, "a model.pt or a checkpoint")->required();
  add_experiment_options(*predict, command);
  predict->add_option("inputs", command.inputs, "IDX image files, PNG or PGM images")->required();
  predict->add_option("--index", command.index, "only this image of each IDX file (from 0)");
  predict->add_option("--top", command.top, "classes shown per image (default 3)")
      ->check(CLI::Range(1, 10));
  predict->add_flag("--json", command.json, "a JSON object per image instead of a table");
  return predict;
}

CLI::App* add_preview(CLI::App& app, Command& command) {
  CLI::App* preview = app.add_subcommand(
      "preview", "the first samples of a split as training sees them: a PNG sheet and a .pt file");
  preview->footer(with_note(kPreviewExamples));
  add_experiment_options(*preview, command);
  preview->add_option("--split", command.preview.split, "train (default), val or test")
      ->check(CLI::IsMember({"train", "val", "test"}));
  preview->add_option("-n,--count", command.preview.count, "how many samples (default 16)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  preview
      ->add_option("--epoch", command.preview.epoch,
                   "train: the epoch whose random transforms to draw, counted from 1 as the "
                   "console and metrics.jsonl count them (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  preview->add_option("-o,--output", command.output_dir,
                      "the folder for SPLIT.png and SPLIT.pt (default: preview)");
  return preview;
}

CLI::App* add_config(CLI::App& app, Command& command) {
  CLI::App* show = app.add_subcommand("config", "validate an experiment and print it resolved");
  show->footer(with_note(kConfigExamples));
  add_experiment_options(*show, command);
  show->add_flag(
      "--keys", command.list_keys,
      "print every key with its type, default, values and meaning (docs/experiments.md's "
      "table, in Markdown) instead");
  return show;
}

CLI::App* add_compare(CLI::App& app, Command& command) {
  CLI::App* compare = app.add_subcommand(
      "compare", "compare runs: what differs between them, accuracy and speed, a row each");
  compare->footer(kCompareExamples);
  compare
      ->add_option("runs", command.runs,
                   "run folders, folders holding runs (a sweep's, runs/), or quoted globs")
      ->required();
  compare->add_option("--format", command.format, "text (default), markdown, csv or json")
      ->check(CLI::IsMember({"text", "markdown", "csv", "json"}));
  compare->add_option("--plot", command.plot_file,
                      "also draw train loss and test accuracy per epoch into this SVG (gnuplot)");
  return compare;
}

CLI::App* add_sweep(CLI::App& app, Command& command) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", "train every point of a grid of --set values, a run folder each, then compare");
  sweep->footer(with_note(kSweepExamples));
  add_experiment_options(*sweep, command);
  sweep
      ->add_option(
          "-g,--grid", command.grid,
          "an axis of the grid: key.path=value1,value2,..., key.path=choice(v1,v2,...) or "
          "key.path=range(start,stop[,step]) (stop left out); repeatable; Hydra's spelling")
      ->allow_extra_args(false)
      ->required();
  sweep->add_option("-o,--output", command.output_dir,
                    "the sweep folder (default: runs/<name>/sweep-<timestamp>, or sweep-<array "
                    "job id> in a SLURM job array)");
  sweep->add_flag("--list", command.list_points, "print the points and their indices, run none");
  sweep->add_option("--index", command.index, "run point I alone (a job array's task)")
      ->check(CLI::NonNegativeNumber);
  sweep->add_option("-j,--jobs", command.jobs, "points trained side by side (default 1)")
      ->check(CLI::Range(1, 256));
  return sweep;
}

CLI::App* add_info(CLI::App& app, Command& command) {
  CLI::App* info = app.add_subcommand("info", "print the LibTorch build, devices and threads");
  info->footer(kInfoExamples);
  info->add_flag("--json", command.json, "one JSON object, for scripts");
  info->add_option("--model", command.summary_model,
                   "print this network's layers with their parameter and buffer counts, and its "
                   "FLOPs per sample, instead (a model.name: lenet, resnet18)");
  return info;
}

// A usage error before or after CLI11's parse, in the words and form of main()'s errors.
int usage_error(const std::string& what, const std::string& hint) {
  std::cerr << "usage error: " << what << "\nhint: " << hint << std::endl;
  return 2;
}

std::vector<std::string> key_paths() {
  std::vector<std::string> paths;
  for (const auto& key : config::schema()) paths.push_back(key.path);
  return paths;
}

// What CLI11 left over in `sub` (allow_extras): the closest option, or the --set spelling of a
// config key given as an option.
int unknown_arguments(const CLI::App& sub, const std::vector<std::string>& left) {
  const std::string help = "`dptrain help " + sub.get_name() + "` lists its options";
  const auto option = std::find_if(
      left.begin(), left.end(), [](const std::string& a) { return a.size() > 1 && a[0] == '-'; });
  if (option == left.end()) {
    return usage_error("dptrain " + sub.get_name() + " takes no argument \"" + left.front() + "\"",
                       help);
  }
  const std::string what = "dptrain " + sub.get_name() + " has no option " + *option;
  std::optional<std::string> value;
  if (option + 1 != left.end() && (option + 1)->rfind('-', 0) != 0) value = *(option + 1);
  const std::vector<std::string> spellings = set_spellings(*option, value, key_paths());
  if (!spellings.empty()) {
    std::string joined;
    for (const auto& s : spellings) joined += (joined.empty() ? "" : ", or ") + s;
    return usage_error(what, "config keys are set with --set: " + joined);
  }
  std::vector<std::string> names;
  for (const CLI::Option* o : sub.get_options()) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  }
  const std::string typed = option->substr(0, option->find('='));
  if (const auto near = closest(typed, names))
    return usage_error(what, "did you mean " + *near + "?");
  return usage_error(what, help);
}

// Whether `word` reads as key.path=value, another pair for the --set before it, rather than a
// file (a predict input named "img=1.png") or a stray value: its key is a config key, or a
// dotted path near one (a mistyped key, answered with the nearest).
bool is_set_pair(const std::string& word) {
  const size_t equals = word.find('=');
  if (equals == 0 || equals == std::string::npos || word[0] == '-') return false;
  const std::string key = word.substr(0, equals);
  const bool key_shaped = std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  if (!key_shaped) return false;
  for (const auto& spec : config::schema()) {
    if (spec.path == key) return true;
  }
  return key.find('.') != std::string::npos && !config::near_keys(key).empty();
}

// A --set value as the examples write it for a shell: quoted when it holds more than letters,
// digits and . , : / + - _ (JSON's brackets and quotes).
std::string shell_value(const std::string& value) {
  const bool plain = std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view(".,:/+-_").find(c) != std::string_view::npos;
  });
  if (plain && !value.empty()) return value;
  std::string quoted = "'";
  for (const char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// One --set takes several pairs, as Hydra's overrides follow one another: "--set optimizer.lr=0.1
// train.epochs=2" becomes a --set for each, before CLI11 parses. (A --set that CLI11 let take
// several values would take any word after it: a predict input, a stray value.) A --set value
// without '=' before a plain word is a pair typed with a space: a usage error that joins them.
// Nothing, with `words` rewritten, when all is well.
std::optional<int> split_set_pairs(std::vector<std::string>& words) {
  std::vector<std::string> out;
  for (size_t i = 0; i < words.size(); ++i) {
    out.push_back(words[i]);
    if (words[i] == "--") {  // what follows is positional, whatever it looks like
      out.insert(out.end(), words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end());
      break;
    }
    std::string value;
    if ((words[i] == "--set" || words[i] == "-s") && i + 1 < words.size()) {
      value = words[++i];
      out.push_back(value);
    } else if (words[i].rfind("--set=", 0) == 0) {
      value = words[i].substr(std::string("--set=").size());
    } else {
      continue;
    }
    const std::string* next = i + 1 < words.size() ? &words[i + 1] : nullptr;
    if (value.find('=') == std::string::npos && !value.empty() && value[0] != '-' && next &&
        !next->empty() && (*next)[0] != '-' && !is_set_pair(*next)) {
      return usage_error("--set " + value + " " + *next + ": a key and its value are one word",
                         "use key=value: --set " + value + "=" + shell_value(*next));
    }
    while (i + 1 < words.size() && is_set_pair(words[i + 1])) {
      out.insert(out.end(), {"--set", words[++i]});
    }
  }
  words = std::move(out);
  return std::nullopt;
}

// Before CLI11 sees the line: `dptrain help [SUBCOMMAND]`, and a first word that is no
// subcommand, answered with the closest. Nothing when CLI11 should parse as usual.
std::optional<int> answer_first_word(CLI::App& app, const std::vector<CLI::App*>& subs, int argc,
                                     const char* const* argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : subs) names.push_back(sub->get_name());
  const auto no_such = [&](const std::string& word) {
    const auto near = closest(word, names);
    return usage_error(
        "dptrain has no subcommand \"" + word + "\"",
        near ? "did you mean `dptrain " + *near + "`?" : "`dptrain help` lists the subcommands");
  };
  if (argc < 2) {
    std::cout << app.help();
    return 0;
  }
  const std::string first = argv[1];
  // What the build generates from this definition (cli/generated_docs.h).
  if (first == "--man-page" || first == "--bash-completion") {
    std::cout << (first == "--man-page" ? man_page(app) : bash_completion(app));
    return 0;
  }
  if (first == "help") {
    if (argc < 3) {
      std::cout << app.help();
      return 0;
    }
    const std::string topic = argv[2];
    if (std::find(names.begin(), names.end(), topic) == names.end()) return no_such(topic);
    std::cout << app.get_subcommand(topic)->help("dptrain");
    return 0;
  }
  if (first.empty() || first[0] == '-') return std::nullopt;
  if (std::find(names.begin(), names.end(), first) == names.end()) return no_such(first);
  return std::nullopt;
}

}  // namespace

ParseResult parse_command_line(int argc, const char* const* argv) {
  CLI::App app("dptrain: data-parallel training of d2l's LeNet on Fashion-MNIST with LibTorch",
               "dptrain");
  app.set_version_flag("--version", std::string("dptrain ") + DPTRAIN_VERSION);
  app.footer(with_note(kOverview));
  app.require_subcommand(1);

  Command command;
  CLI::App* train = add_train(app, command);
  CLI::App* evaluate = add_evaluate(app, command);
  CLI::App* predict = add_predict(app, command);
  CLI::App* preview = add_preview(app, command);
  CLI::App* show = add_config(app, command);
  CLI::App* info = add_info(app, command);
  CLI::App* compare = add_compare(app, command);
  CLI::App* sweep = add_sweep(app, command);
  const std::vector<CLI::App*> subs = {train, evaluate, predict, preview,
                                       show,  info,     compare, sweep};
  for (CLI::App* sub : subs) add_common_options(*sub, command);

  if (const auto status = answer_first_word(app, subs, argc, argv)) return {std::nullopt, *status};
  // A mistyped option answers before what CLI11 checks first (a required option, then missing).
  const auto leftovers = [&subs]() -> std::optional<int> {
    for (const CLI::App* sub : subs) {
      if (const std::vector<std::string> left = sub->remaining(); sub->parsed() && !left.empty()) {
        return unknown_arguments(*sub, left);
      }
    }
    return std::nullopt;
  };
  std::vector<std::string> words(argv + 1, argv + argc);
  if (const auto status = split_set_pairs(words)) return {std::nullopt, *status};
  std::reverse(words.begin(), words.end());  // CLI11 takes the words last first
  try {
    app.parse(std::move(words));
  } catch (const CLI::ParseError& e) {
    if (const auto status = leftovers()) return {std::nullopt, *status};
    const int status = app.exit(e);
    return {std::nullopt, status == 0 ? 0 : 2};
  }
  if (const auto status = leftovers()) return {std::nullopt, *status};
  // An empty path names no file or folder (the file system would answer with an exception).
  for (const auto* path : {&command.output_dir, &command.report_file, &command.plot_file}) {
    if (*path && (*path)->empty()) {
      return {std::nullopt, usage_error("an empty path was given for a file or folder to write",
                                        "give --output (or --plot) a path")};
    }
  }
  const std::vector<std::pair<const CLI::App*, Action>> actions = {
      {train, Action::kTrain},     {evaluate, Action::kEvaluate}, {predict, Action::kPredict},
      {preview, Action::kPreview}, {show, Action::kConfig},       {info, Action::kInfo},
      {compare, Action::kCompare}, {sweep, Action::kSweep}};
  for (const auto& [sub, action] : actions) {
    if (sub->parsed()) command.action = action;
  }
  for (const char* name : {"--nnodes", "--node-rank", "--master-addr", "--master-port"}) {
    command.nodes.given = command.nodes.given || (train->parsed() && train->count(name) > 0);
  }
  return {command, 0};
}

}  // namespace dptrain::cli
