// Every example that dptrain prints (the Examples of `dptrain help` and of each subcommand's
// help) and every command in the README and docs/*.md (their indented shell lines) is run here as
// printed, through /bin/sh, in a scratch folder: `dptrain` and `build/dptrain` are the built
// binary, configs/ and scripts/ the project's, DPTRAIN_DATA_DIR a tiny data set, so that the
// default experiment's 10 epochs take seconds. The files an example reads before any example
// wrote them (runs/X/model.pt, runs/d2l-lenet/*, shoe.png ...) are made first.
//
// An example this machine cannot run (a SLURM cluster, several machines, the GPU machine, hours
// of training) is named with its reason in the test's output. A command the rules below do not
// know fails the test, so that a new example is run, or its reason written down, before it ships.
// Fenced ```python blocks are fragments, not commands: tests/python/ runs what they describe.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/catch.h"
#include "support/fixtures.h"

using namespace dptrain::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = DPTRAIN_SOURCE_DIR;

// `text` without its leading spaces and, when `cut_description` (help lines: "command   what it
// does"), without what follows the first run of two or more spaces.
std::string command_part(const std::string& text, bool cut_description) {
  std::string line = text.substr(std::min(text.find_first_not_of(' '), text.size()));
  if (cut_description) line = line.substr(0, line.find("  "));
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// Physical lines ending in '\' joined with the lines that continue them.
std::vector<std::string> join_continued(const std::vector<std::string>& lines) {
  std::vector<std::string> commands;
  bool continues = false;
  for (const std::string& line : lines) {
    if (continues) {
      commands.back() += " " + line;
    } else {
      commands.push_back(line);
    }
    continues = !commands.back().empty() && commands.back().back() == '\\';
    if (continues) {
      commands.back().pop_back();
      while (!commands.back().empty() && commands.back().back() == ' ') commands.back().pop_back();
    }
  }
  return commands;
}

// The commands under "Examples:" in `dptrain [subcommand] --help`.
std::vector<std::string> help_examples(const std::string& subcommand) {
  const ProcessResult help = run_dptrain(subcommand + " --help");
  REQUIRE(help.status == 0);
  std::istringstream text(help.out);
  std::vector<std::string> lines;
  bool in_examples = false;
  for (std::string line; std::getline(text, line);) {
    if (line == "Examples:") {
      in_examples = true;
    } else if (in_examples && line.rfind("  ", 0) == 0) {
      lines.push_back(command_part(line, true));
    } else if (in_examples) {
      break;
    }
  }
  INFO("dptrain " << subcommand << " --help");
  REQUIRE_FALSE(lines.empty());
  return join_continued(lines);
}

// The programs whose indented lines in a Markdown file are commands; other indented lines are
// output, code or prose.
bool names_a_program(const std::string& line) {
  static const std::regex program(
      R"(^(dptrain|build/dptrain|torchrun|mpirun|sbatch|srun|tensorboard|cmake|ctest|export|ls|cat|python3|scripts/\S+|\.\./\S+)( |$))");
  return std::regex_search(line, program);
}

// The shell commands of a Markdown file: its indented lines outside ``` fences that start with a
// program, continued lines joined.
std::vector<std::string> doc_commands(const fs::path& markdown) {
  std::istringstream text(read_bytes(markdown));
  std::vector<std::string> lines;
  bool fenced = false;
  bool continues = false;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.rfind("    ", 0) != 0) {
      continues = false;
      continue;
    }
    const std::string command = command_part(line, false);
    if (continues || names_a_program(command)) lines.push_back(command);
    continues = (continues || names_a_program(command)) && command.back() == '\\';
  }
  return join_continued(lines);
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

bool has_program(const std::string& name) {
  return run_program("/bin/sh", "-c " + shell_words({"command -v " + name})).status == 0;
}

// Why `command` is not run on this machine, or nullopt when it is. Fails on a command no rule
// knows.
std::optional<std::string> why_not_run(const std::string& command) {
  const std::string c = command.substr(0, command.find(" #"));
  static const std::regex alternatives(R"(\w\|\w)");  // lenet|resnet18, not a pipe
  if (c.find(" [") != std::string::npos || std::regex_search(c, alternatives)) {
    return "a synopsis, not an example";
  }
  if (starts_with(c, "sbatch") || starts_with(c, "srun")) {
    return "needs a SLURM cluster (tests/cli/batch_scripts_test.cpp runs the batch scripts with "
           "stand-ins for srun and scontrol)";
  }
  if (c.find("--nnodes") != std::string::npos || starts_with(c, "export DPTRAIN_JOB_SECRET")) {
    return "needs several machines (tests/cli/nodes_test.cpp and elastic_test.cpp run this "
           "across network namespaces)";
  }
  if (starts_with(c, "tensorboard")) return "TensorBoard's server, which serves until stopped";
  if (starts_with(c, "scripts/train.sh") || starts_with(c, "scripts/test.sh") ||
      starts_with(c, "cmake") || starts_with(c, "ctest")) {
    return "builds dptrain and this suite (CI runs scripts/test.sh from a clean clone)";
  }
  if (starts_with(c, "scripts/reproduce_d2l.sh")) {
    return "trains every d2l experiment on the whole data set: hours without GPUs";
  }
  if (starts_with(c, "scripts/check_torch2.sh")) {
    return "builds against LibTorch 2.6 in a Debian trixie chroot (about an hour)";
  }
  if (starts_with(c, "scripts/gpu_round.sh") || starts_with(c, "../shared/device/")) {
    return "for the GPU machine";
  }
  if (starts_with(c, "torchrun") && !has_program("torchrun")) {
    return "no torchrun here (Debian's python3-torch has one)";
  }
  if (starts_with(c, "mpirun") && !has_program("mpirun")) {
    return "no mpirun here (Debian's openmpi-bin)";
  }
  static const std::regex runnable(R"(^(dptrain|build/dptrain|torchrun|mpirun|ls|cat) )");
  INFO("an example no rule knows: run it here, or say why not in why_not_run: " << command);
  REQUIRE(std::regex_search(c, runnable));
  return std::nullopt;
}

std::vector<std::string> words_of(const std::string& command) {
  std::istringstream in(command.substr(0, command.find(" #")));
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Whether the first example that names `path` (or a file under it) reads it: it does unless the
// path follows --output there.
bool read_before_written(const std::vector<std::string>& commands, const std::string& path) {
  for (const std::string& command : commands) {
    const std::vector<std::string> words = words_of(command);
    for (size_t i = 0; i < words.size(); ++i) {
      if (words[i] != path && !starts_with(words[i], path + "/")) continue;
      return i == 0 || words[i - 1] != "--output";
    }
  }
  return false;
}

void copy_run(const fs::path& dir, const std::string& from, const std::string& to) {
  fs::create_directories((dir / to).parent_path());
  fs::copy(dir / from, dir / to, fs::copy_options::recursive);
}

// A 28x28 binary greyscale PGM (P5).
void write_pgm(const fs::path& path) {
  std::vector<uint8_t> bytes;
  for (char c : std::string("P5\n28 28\n255\n")) bytes.push_back(static_cast<uint8_t>(c));
  for (int i = 0; i < 28 * 28; ++i) bytes.push_back(static_cast<uint8_t>(i % 251));
  write_bytes(path, bytes);
}

struct Scratch {
  TempDir root;
  fs::path work = root / "work";
  std::vector<std::string> env;
};

ProcessResult run_in(const Scratch& s, const std::string& command) {
  return run_program("/usr/bin/timeout", shell_words({"600", "/bin/sh", "-c", command}), s.work,
                     s.env);
}

void make(const Scratch& s, const std::string& command) {
  const ProcessResult made = run_in(s, command);
  INFO("making a file the examples read: " << command << "\n" << made.out << made.err);
  REQUIRE(made.status == 0);
}

// The runs and files the examples read before writing them, made the way a user would have.
void make_what_they_read(const Scratch& s, const std::vector<std::string>& commands) {
  const auto reads = [&](const std::string& path) { return read_before_written(commands, path); };
  const std::vector<std::string> copies = {"runs/try", "runs/a", "runs/b", "runs/d2l-lenet"};
  bool needs_run = reads("runs/X") || reads("model.pt");
  for (const auto& c : copies) needs_run = needs_run || reads(c);
  if (needs_run)
    make(s, "dptrain train -q --set train.epochs=3 --set data.val_split=0.1 --output runs/X");
  for (const auto& c : copies) {
    if (reads(c)) copy_run(s.work, "runs/X", c == "runs/d2l-lenet" ? c + "/20261126-101500" : c);
  }
  if (reads("model.pt")) fs::copy_file(s.work / "runs/X/model.pt", s.work / "model.pt");
  for (const std::string sweep : {"runs/sweep-7", "runs/d2l-lenet/sweep-7"}) {
    if (reads(sweep)) make(s, "dptrain sweep -q --grid optimizer.lr=0.05,0.1 --output " + sweep);
  }
  for (const std::string png : {"shoe.png", "shirt.png"}) {
    if (reads(png)) fs::copy_file(kSource / "tests/data/images/grey.png", s.work / png);
  }
  if (reads("bag.pgm")) write_pgm(s.work / "bag.pgm");
  const std::string images = "t10k-images-idx3-ubyte.gz";
  if (reads(images)) fs::copy_file(s.root / "data" / images, s.work / images);
}

// Runs `commands` in order in one scratch folder, as a user following `source` would.
void run_examples(const std::string& source, const std::vector<std::string>& commands) {
  Scratch s;
  write_tiny_dataset(s.root / "data", 600, 200);
  fs::create_directories(s.work / "build");
  fs::create_directories(s.root / "bin");
  fs::create_symlink(DPTRAIN_BINARY, s.root / "bin" / "dptrain");
  fs::create_symlink(DPTRAIN_BINARY, s.work / "build" / "dptrain");
  fs::create_directory_symlink(kSource / "configs", s.work / "configs");
  fs::create_directory_symlink(kSource / "scripts", s.work / "scripts");
  const char* path = std::getenv("PATH");
  s.env = {"PATH=" + (s.root / "bin").string() + ":" + (path ? path : "/usr/bin:/bin"),
           "DPTRAIN_DATA_DIR=" + (s.root / "data").string(),
           // Open MPI refuses root (CI's user) unless told twice.
           "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  make_what_they_read(s, commands);
  for (const std::string& command : commands) {
    if (const auto why = why_not_run(command)) {
      WARN(source << ": not run here: " << command << "\n  (" << *why << ")");
      continue;
    }
    const ProcessResult run = run_in(s, command);
    INFO(source << ": " << command << "\n" << run.out << run.err);
    CHECK(run.status == 0);
  }
}

}  // namespace

TEST_CASE("every example in dptrain's help runs as printed", "[cli][examples]") {
  for (const std::string subcommand :
       {"", "train", "evaluate", "predict", "config", "compare", "sweep", "info"}) {
    run_examples("dptrain " + subcommand + " --help", help_examples(subcommand));
  }
}

TEST_CASE("every command in the README runs as printed", "[cli][examples]") {
  run_examples("README.md", doc_commands(kSource / "README.md"));
}

TEST_CASE("every command in docs/ runs as printed", "[cli][examples]") {
  size_t commands = 0;
  for (const auto& entry : fs::directory_iterator(kSource / "docs")) {
    if (entry.path().extension() != ".md") continue;
    const std::vector<std::string> found = doc_commands(entry.path());
    commands += found.size();
    if (!found.empty()) run_examples("docs/" + entry.path().filename().string(), found);
  }
  CHECK(commands >= 40);  // the parser still finds them: 49 when this was written
}
