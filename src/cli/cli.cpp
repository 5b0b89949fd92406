#include "cli/cli.h"

#include <CLI/CLI.hpp>

namespace dptrain::cli {
namespace {

constexpr const char* kExamples = R"(Examples:
  dptrain train                                   d2l's LeNet on Fashion-MNIST, best device
  dptrain train --config configs/d2l.json --set train.epochs=2 --output runs/try
  dptrain train --set parallel.devices='["cpu"]' --set runtime.threads=2
  dptrain train --config configs/ddp_cpu.json       ddp: one process per device, launched here
  torchrun --nproc-per-node 2 --no-python dptrain train --config configs/ddp_cpu.json
  dptrain evaluate --model runs/X/model.pt --config runs/X/config.json
  dptrain predict --model runs/X/model.pt --index 0 t10k-images-idx3-ubyte.gz shoe.png
  dptrain config --config configs/cpu_smoke.json  print the resolved experiment
  dptrain info                                    what this build and machine offer
A --set value is read as JSON when it parses (3, true, ["cpu"], "text"), else as a string.)";

void add_experiment_options(CLI::App& sub, Command& command) {
  sub.add_option("-c,--config", command.config_file, "experiment file (JSON)")
      ->check(CLI::ExistingFile);
  sub.add_option("-s,--set", command.overrides, "override a key: key.path=value (repeatable)")
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

void add_restart_option(CLI::App& sub, Command& command) {
  sub.add_option("--max-restarts", command.max_restarts,
                 "ddp under dptrain's launcher: when a rank fails, start every rank again from "
                 "the newest checkpoint, up to N times (as torchrun's --max_restarts; default: "
                 "parallel.max_restarts)")
      ->check(CLI::Range(0, 1000));
}

CLI::App* add_train(CLI::App& app, Command& command) {
  CLI::App* train = app.add_subcommand("train", "train a model as an experiment file says");
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
  add_restart_option(*train, command);
  return train;
}

CLI::App* add_evaluate(CLI::App& app, Command& command) {
  CLI::App* evaluate = app.add_subcommand(
      "evaluate", "evaluate a model.pt or checkpoint: loss, accuracy, per class, confusion");
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
  predict->add_option("-m,--model", command.model_file, "a model.pt or a checkpoint")->required();
  add_experiment_options(*predict, command);
  predict->add_option("inputs", command.inputs, "IDX image files, PNG or PGM images")->required();
  predict->add_option("--index", command.index, "only this image of each IDX file (from 0)");
  predict->add_option("--top", command.top, "classes shown per image (default 3)")
      ->check(CLI::Range(1, 10));
  predict->add_flag("--json", command.json_lines, "a JSON object per image instead of a table");
  return predict;
}

}  // namespace

ParseResult parse_command_line(int argc, const char* const* argv) {
  CLI::App app("dptrain: data-parallel training of d2l's LeNet on Fashion-MNIST with LibTorch",
               "dptrain");
  app.set_version_flag("--version", std::string("dptrain ") + DPTRAIN_VERSION);
  app.footer(kExamples);
  app.require_subcommand(1);

  Command command;
  CLI::App* train = add_train(app, command);
  CLI::App* evaluate = add_evaluate(app, command);
  CLI::App* predict = add_predict(app, command);
  CLI::App* show = app.add_subcommand("config", "validate an experiment and print it resolved");
  add_experiment_options(*show, command);
  show->add_flag("--keys", command.list_keys,
                 "print every key with its type, default, values and meaning (the README's "
                 "table, in Markdown) instead");
  app.add_subcommand("info", "print the LibTorch build, devices and threads");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return {std::nullopt, status == 0 ? 0 : 2};
  }
  if (train->parsed()) {
    command.action = Action::kTrain;
    for (const char* name : {"--nnodes", "--node-rank", "--master-addr", "--master-port"}) {
      command.nodes.given = command.nodes.given || train->count(name) > 0;
    }
  } else if (evaluate->parsed()) {
    command.action = Action::kEvaluate;
  } else if (predict->parsed()) {
    command.action = Action::kPredict;
  } else if (show->parsed()) {
    command.action = Action::kConfig;
  } else {
    command.action = Action::kInfo;
  }
  return {command, 0};
}

}  // namespace dptrain::cli
