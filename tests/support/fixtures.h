// Helpers shared by the tests: scratch folders, hand-made IDX files, running the built binary.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dptrain::testing {

// A fresh folder under the system's temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// The bytes of an unsigned-byte IDX file with these dimensions and values.
std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& values);
void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
void write_gzip(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
void write_text(const std::filesystem::path& path, const std::string& text);
// A file of any kind and size up to 1 GiB (a ResNet's model.pt passes the 16 MiB that dptrain's
// own text reads take).
std::string read_bytes(const std::filesystem::path& path);

// Writes the four (Fashion-)MNIST files of a tiny data set: `train` and `test` images of 28x28
// whose pixels encode their index, labels index % 10.
void write_tiny_dataset(const std::filesystem::path& dir, int64_t train, int64_t test);
// The first `train` and `test` images of the real Fashion-MNIST (real_data_dir()), in IDX files
// under `dir`: real pictures at a test's cost, for networks too slow to see the whole set.
void write_real_subset(const std::filesystem::path& dir, int64_t train, int64_t test);

// Where the real Fashion-MNIST is (as the tool looks it up); the tests that need it fail with a
// message that says how to install it when it is missing.
std::filesystem::path real_data_dir();

struct ProcessResult {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs `program` with these arguments (a shell-quoted string) in `cwd`, with `env` ("NAME=value"
// each) added to the environment.
ProcessResult run_program(const std::filesystem::path& program, const std::string& args,
                          const std::filesystem::path& cwd = {},
                          const std::vector<std::string>& env = {});

// The arguments as one shell-quoted string (each in single quotes, its own quotes escaped), for
// run_program and run_dptrain.
std::string shell_words(const std::vector<std::string>& args);

// run_program for the built dptrain.
ProcessResult run_dptrain(const std::string& args, const std::filesystem::path& cwd = {},
                          const std::vector<std::string>& env = {});

// The pids dptrain's launcher logged as started ("ddp: rank R started (pid P)"), in the order it
// started them; `rank` -1: every rank's.
std::vector<int> started_rank_pids(const std::string& log, int rank = -1);

// Whether process `pid` still runs: a zombie (ended, its parent not yet waiting for it) does not.
bool process_alive(int pid);
// Waits up to `timeout_s` for process `pid` to end; whether it did.
bool process_ends(int pid, double timeout_s);

// Whether Debian's python3-torch (with numpy) is installed: the tests that check files against
// real PyTorch need it.
bool python_torch_present();
// The python of the project's venv (scripts/venv.sh): under DPTRAIN_VENV, else .venv/ in the
// source tree. Empty when that venv is missing or not this user's alone (scripts/venv.sh's rule).
std::filesystem::path venv_python();
// The Pythons whose PyTorch the tests load dptrain's files with, and save theirs: Debian's
// python3-torch (1.13) and, when the project's venv has it (scripts/venv.sh torch), PyPI's
// torch 2.x. Empty when neither imports torch and numpy.
std::vector<std::filesystem::path> pytorch_pythons();

// A TCP port that nothing on this machine listens on right now.
int free_port();

// dptrain running in the background, its stdout and stderr going to files, so that a test can
// watch it and send it signals. Killed (SIGKILL) if still running when destroyed.
class BackgroundRun {
 public:
  // `launcher`: words run before the binary, which exec it (a test host's, support/test_hosts.h).
  explicit BackgroundRun(const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {},
                         const std::vector<std::string>& launcher = {});
  ~BackgroundRun();
  BackgroundRun(const BackgroundRun&) = delete;
  BackgroundRun& operator=(const BackgroundRun&) = delete;

  // Waits until stderr contains `text`; false after `timeout_s`, or if the process ended first.
  bool wait_for_stderr(const std::string& text, double timeout_s);
  void signal(int signal_number) const;
  int pid() const { return pid_; }
  std::string stderr_text() const;
  // Waits for the exit; status -1 after `timeout_s` (the process is then killed) or on a signal.
  ProcessResult finish(double timeout_s);

 private:
  TempDir capture_;
  int pid_ = -1;
  bool reaped_ = false;
};

}  // namespace dptrain::testing
