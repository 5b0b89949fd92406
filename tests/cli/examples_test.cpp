// Every example that dptrain prints (the Examples of `dptrain help` and of each subcommand's
// help) and every command in the README and docs/*.md (every line of their indented and fenced
// blocks but printed output) is run here as printed, through /bin/sh, in a scratch folder:
// `dptrain` and `build/dptrain` are the built binary, configs/ a copy of the project's, scripts/
// the project's, DPTRAIN_DATA_DIR a tiny data set, so that the default experiment's 10 epochs
// take a second. The files an example reads before any example wrote them (runs/X/model.pt,
// runs/d2l-lenet/*, shoe.png ...) are made first.
//
// An example this machine cannot run (a SLURM cluster, several machines, the GPU machine, hours
// of training) is named with its reason in the test's output. A command the rules below do not
// know fails the test, so that a new example is run, or its reason written down, before it ships.
// Fenced ```python blocks are fragments, not commands: tests/python/ runs what they describe.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/catch.h"
#include "support/fixtures.h"
#include "support/picture_folders.h"

using namespace dptrain::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = DPTRAIN_SOURCE_DIR;

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// The command without its shell comment.
std::string without_comment(const std::string& command) {
  return command.substr(0, command.find(" #"));
}

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

// Lines of an indented block that are a command's printed output, or a synopsis's continued
// options, not commands.
bool is_output(const std::string& line) {
  static const std::regex output(R"(^(test acc:|early stopping:|\[--))");
  return std::regex_search(line, output);
}

// The shell commands of a Markdown file: every line of its indented blocks and of its fenced
// blocks but ```python and ```json ones (fragments: tests/python/ runs what they describe, and
// the experiment files' tests read configs/), continued lines
// joined within their block, printed output left out.
std::vector<std::string> doc_commands(const fs::path& markdown) {
  std::istringstream text(read_bytes(markdown));
  std::vector<std::vector<std::string>> blocks(1);
  std::optional<std::string> fence;  // the open fence's info string
  for (std::string line; std::getline(text, line);) {
    const std::string trimmed = command_part(line, false);
    if (starts_with(trimmed, "```") || starts_with(trimmed, "~~~")) {
      fence = fence ? std::nullopt : std::optional<std::string>(trimmed.substr(3));
      blocks.emplace_back();
    } else if (fence ? *fence != "python" && *fence != "json" && !trimmed.empty()
                     : starts_with(line, "    ") && !trimmed.empty()) {
      blocks.back().push_back(trimmed);
    } else if (!blocks.back().empty()) {
      blocks.emplace_back();
    }
  }
  std::vector<std::string> commands;
  for (const auto& block : blocks) {
    for (const std::string& command : join_continued(block)) {
      if (!is_output(command)) commands.push_back(command);
    }
  }
  return commands;
}

// Whether `probe` (a shell command) succeeds: the program is there and starts.
bool works(const std::string& probe) {
  return run_program("/bin/sh", "-c " + shell_words({probe + " >/dev/null 2>&1"})).status == 0;
}

// Why `command` is not run on this machine, or nullopt when it is. Fails on a command no rule
// knows.
std::optional<std::string> why_not_run(const std::string& command) {
  const std::string line = without_comment(command);
  // [--set ...], [SUBCOMMAND], lenet|resnet18 (these docs write a pipe with spaces around it).
  static const std::regex synopsis(R"(\[--|\[[A-Z]+\]|\w\|\w)");
  if (std::regex_search(line, synopsis)) return "a synopsis, not an example";
  if (starts_with(line, "sbatch") || line.find("scontrol ") != std::string::npos) {
    return "needs a SLURM cluster (tests/cli/batch_scripts_test.cpp runs the batch scripts with "
           "stand-ins for srun and scontrol)";
  }
  static const std::regex nodes(R"(--nnodes (\d+:)?[2-9])");
  // The variables an example across machines exports on each.
  if (std::regex_search(line, nodes) || starts_with(line, "export DPTRAIN_JOB_SECRET") ||
      starts_with(line, "export TORCH_DISABLE_SHARE_RDZV_TCP_STORE")) {
    return "needs several machines (tests/cli/nodes_test.cpp and elastic_test.cpp run this "
           "across network namespaces)";
  }
  if (starts_with(line, "tensorboard")) return "TensorBoard's server, which serves until stopped";
  if (starts_with(line, "scripts/train.sh") || starts_with(line, "scripts/test.sh") ||
      starts_with(line, "cmake") || starts_with(line, "ctest")) {
    return "builds dptrain and this suite (CI runs scripts/test.sh from a clean clone)";
  }
  if (starts_with(line, "scripts/reproduce_d2l.sh")) {
    return "trains every d2l experiment on the whole data set: hours without GPUs";
  }
  if (starts_with(line, "scripts/check_torch2.sh")) {
    return "builds against LibTorch 2.6 in a Debian trixie chroot (about an hour)";
  }
  if (starts_with(line, "scripts/check_torch_pip.sh") || starts_with(line, "python3 -m venv") ||
      line.find("/bin/pip install") != std::string::npos) {
    return "installs pip's torch 2.x from PyPI (about 5 GB) and builds against it (20 minutes "
           "and more)";
  }
  if (starts_with(line, "scripts/gpu_round.sh") || starts_with(line, "scripts/pack_device.sh") ||
      starts_with(line, "../shared/device/")) {
    return "for the GPU machine";
  }
  // The same probes as the suite's other torchrun and plot tests.
  if (starts_with(line, "torchrun") && !works("torchrun --help")) {
    return "no torchrun here (Debian's python3-torch has one)";
  }
  if (starts_with(line, "mpirun") && !works("mpirun --version")) {
    return "no mpirun here (Debian's openmpi-bin)";
  }
  if (line.find("--plot") != std::string::npos && !works("command -v gnuplot")) {
    return "no gnuplot here (Debian's gnuplot-nox; scripts/setup.sh installs it)";
  }
  static const std::regex runnable(R"(^(dptrain|build/dptrain|torchrun|mpirun|ls|cat) )");
  INFO("an example no rule knows: run it here, or say why not in why_not_run: " << command);
  REQUIRE(std::regex_search(line, runnable));
  return std::nullopt;
}

std::vector<std::string> words_of(const std::string& command) {
  std::istringstream in(without_comment(command));
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

// The folder the examples run in, and what their environment adds.
struct Scratch {
  TempDir root;  // data/ (the tiny data set), bin/ (dptrain), work/ (the examples' folder)
  fs::path work = root / "work";
  std::vector<std::string> env;
};

// Runs `command` through /bin/sh in the scratch folder, its input empty, for at most 5 minutes.
ProcessResult run_in(const Scratch& scratch, const std::string& command) {
  return run_program("/usr/bin/timeout",
                     shell_words({"300", "/bin/sh", "-c", command + " </dev/null"}), scratch.work,
                     scratch.env);
}

void make_file_with(const Scratch& scratch, const std::string& command) {
  const ProcessResult made = run_in(scratch, command);
  INFO("making a file the examples read: " << command << "\n" << made.out << made.err);
  REQUIRE(made.status == 0);
}

// The runs and files the examples read before writing them, made the way a user would have.
void make_what_they_read(const Scratch& scratch, const std::vector<std::string>& commands) {
  const auto reads = [&](const std::string& path) { return read_before_written(commands, path); };
  const std::vector<std::string> copies = {"runs/try", "runs/a", "runs/b", "runs/d2l-lenet"};
  bool needs_run = reads("runs/X") || reads("model.pt");
  for (const auto& copy : copies) needs_run = needs_run || reads(copy);
  if (needs_run) {
    make_file_with(scratch,
                   "dptrain train -q --set train.epochs=3 --set data.val_split=0.1 "
                   "--output runs/X");
  }
  for (const auto& copy : copies) {
    // runs/d2l-lenet/* stands for the default config's runs, each in a folder named by its time.
    const std::string to = copy == "runs/d2l-lenet" ? copy + "/20261126-101500" : copy;
    if (reads(copy)) copy_run(scratch.work, "runs/X", to);
  }
  if (reads("model.pt")) fs::copy_file(scratch.work / "runs/X/model.pt", scratch.work / "model.pt");
  for (const std::string sweep : {"runs/sweep-7", "runs/d2l-lenet/sweep-7"}) {
    if (reads(sweep)) {
      make_file_with(scratch, "dptrain sweep -q --grid optimizer.lr=0.05,0.1 --output " + sweep);
    }
  }
  for (const std::string png : {"shoe.png", "shirt.png"}) {
    if (reads(png)) fs::copy_file(kSource / "tests/data/images/grey.png", scratch.work / png);
  }
  if (reads("bag.pgm")) write_pgm(scratch.work / "bag.pgm");
  if (reads("data.dir=pictures")) {  // a folder of the user's own pictures: real ones here
    PictureFolderOptions named;
    named.numbered_classes = false;
    write_picture_folder(scratch.work / "pictures", 200, 100, named);
  }
  const std::string images = "t10k-images-idx3-ubyte.gz";
  if (reads(images)) fs::copy_file(scratch.root / "data" / images, scratch.work / images);
}

// An `ls FOLDER  # name name ...` example says what the folder holds: each name (a '*' ends a
// prefix) must be in what ls printed, and nothing else.
void check_listed(const std::string& command, const std::string& listed) {
  const size_t comment = command.find(" #");
  if (!starts_with(command, "ls ") || comment == std::string::npos) return;
  const std::vector<std::string> printed = words_of(listed);
  const std::vector<std::string> said = words_of(command.substr(comment + 2));
  for (const std::string& name : said) {
    const std::string prefix = name.substr(0, name.find('*'));
    const auto found = std::find_if(printed.begin(), printed.end(), [&](const std::string& p) {
      return name.find('*') == std::string::npos ? p == name : starts_with(p, prefix);
    });
    INFO(command << " printed: " << listed);
    CHECK(found != printed.end());
  }
  CHECK(printed.size() == said.size());
}

// A scratch folder with the tiny data set, dptrain on PATH and as build/dptrain, and copies of
// the project's configs/ (an example could write there) and scripts/.
void set_up(Scratch& scratch) {
  write_tiny_dataset(scratch.root / "data", 256, 64);  // a step an epoch at batch 256
  fs::create_directories(scratch.work / "build");
  fs::create_directories(scratch.root / "bin");
  fs::create_symlink(DPTRAIN_BINARY, scratch.root / "bin" / "dptrain");
  fs::create_symlink(DPTRAIN_BINARY, scratch.work / "build" / "dptrain");
  fs::copy(kSource / "configs", scratch.work / "configs", fs::copy_options::recursive);
  fs::create_directory_symlink(kSource / "scripts", scratch.work / "scripts");
  const char* path = std::getenv("PATH");
  scratch.env = {"PATH=" + (scratch.root / "bin").string() + ":" + (path ? path : "/usr/bin:/bin"),
                 "DPTRAIN_DATA_DIR=" + (scratch.root / "data").string(),
                 // torchrun's --master_port, so that examples in tests side by side never meet
                 // on its default 29500.
                 "PET_MASTER_PORT=" + std::to_string(free_port()),
                 // Open MPI refuses root (CI's user) unless told twice.
                 "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
}

// Runs `commands` in order in one scratch folder, as a user following `source` would; how many
// ran. Those this machine cannot run are named with their reason (`dptrain_tests '[examples]'`
// prints them).
size_t run_examples(const std::string& source, const std::vector<std::string>& commands) {
  std::vector<std::string> runnable;
  for (const std::string& command : commands) {
    if (const auto why = why_not_run(command)) {
      WARN(source << ": not run here: " << command << "\n  (" << *why << ")");
    } else {
      runnable.push_back(command);
    }
  }
  Scratch scratch;
  set_up(scratch);
  make_what_they_read(scratch, runnable);
  for (const std::string& command : runnable) {
    const ProcessResult run = run_in(scratch, command);
    INFO(source << ": " << command << "\n" << run.out << run.err);
    CHECK(run.status == 0);
    check_listed(command, run.out);
  }
  return runnable.size();
}

// The subcommands `dptrain --help` lists.
std::vector<std::string> subcommands() {
  std::istringstream text(run_dptrain("--help").out);
  std::vector<std::string> names;
  bool listed = false;
  for (std::string line; std::getline(text, line);) {
    if (line == "Subcommands:") {
      listed = true;
    } else if (listed && starts_with(line, "  ")) {
      names.push_back(words_of(line).at(0));
    } else if (listed) {
      break;
    }
  }
  return names;
}

}  // namespace

TEST_CASE("every example in dptrain's help runs as printed", "[cli][examples][slow]") {
  const std::vector<std::string> names = subcommands();
  REQUIRE(names.size() >= 7);
  size_t ran = run_examples("dptrain --help", help_examples(""));
  for (const std::string& name : names) {
    ran += run_examples("dptrain " + name + " --help", help_examples(name));
  }
  CHECK(ran >= 25);  // 28 when this was written: the parser still finds them
}

TEST_CASE("every command in the README runs as printed", "[cli][examples][slow]") {
  CHECK(run_examples("README.md", doc_commands(kSource / "README.md")) >= 8);  // 10 when written
}

TEST_CASE("every command in docs/ runs as printed", "[cli][examples][slow]") {
  size_t ran = 0;
  for (const auto& entry : fs::directory_iterator(kSource / "docs")) {
    if (entry.path().extension() != ".md") continue;
    ran += run_examples("docs/" + entry.path().filename().string(), doc_commands(entry.path()));
  }
  CHECK(ran >= 18);  // 21 when this was written (with mpirun): the parser still finds them
}
