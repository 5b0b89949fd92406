#include "support/fixtures.h"

#include "core/fs.h"
#include "data/idx.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <fcntl.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "data/locate.h"

namespace dptrain::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "dptrain-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& values) {
  std::vector<uint8_t> bytes = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(d >> shift));
  }
  bytes.insert(bytes.end(), values.begin(), values.end());
  return bytes;
}

void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

void write_gzip(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("gzopen failed");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string read_bytes(const std::filesystem::path& path) {
  return core::read_regular_file(path, size_t{1} << 30);
}

void write_tiny_dataset(const std::filesystem::path& dir, int64_t train, int64_t test) {
  std::filesystem::create_directories(dir);
  auto write_split = [&](const std::string& prefix, int64_t n) {
    std::vector<uint8_t> pixels(static_cast<size_t>(n * 28 * 28));
    std::vector<uint8_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t p = 0; p < 28 * 28; ++p)
        pixels[i * 784 + p] = static_cast<uint8_t>((i + p) % 256);
      labels[i] = static_cast<uint8_t>(i % 10);
    }
    const auto count = static_cast<uint32_t>(n);
    write_gzip(dir / (prefix + "-images-idx3-ubyte.gz"), idx_bytes({count, 28, 28}, pixels));
    write_gzip(dir / (prefix + "-labels-idx1-ubyte.gz"), idx_bytes({count}, labels));
  };
  write_split("train", train);
  write_split("t10k", test);
}

std::filesystem::path real_data_dir() {
  return data::locate_data_dir("", "fashion-mnist");
}

void write_real_subset(const std::filesystem::path& dir, int64_t train, int64_t test) {
  std::filesystem::create_directories(dir);
  const auto copy_first = [&](const std::string& name, int64_t n) {
    const data::IdxArray all = data::read_idx(real_data_dir() / (name + ".gz"));
    std::vector<uint32_t> dims(all.dims.begin(), all.dims.end());
    dims[0] = static_cast<uint32_t>(n);
    const size_t per_item = all.values.size() / static_cast<size_t>(all.dims[0]);
    const std::vector<uint8_t> first(all.values.begin(),
                                     all.values.begin() + static_cast<int64_t>(per_item) * n);
    write_gzip(dir / (name + ".gz"), idx_bytes(dims, first));
  };
  copy_first("train-images-idx3-ubyte", train);
  copy_first("train-labels-idx1-ubyte", train);
  copy_first("t10k-images-idx3-ubyte", test);
  copy_first("t10k-labels-idx1-ubyte", test);
}

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

ProcessResult run_program(const std::filesystem::path& program, const std::string& args,
                          const std::filesystem::path& cwd, const std::vector<std::string>& env) {
  TempDir capture;
  std::string command;
  if (!cwd.empty()) command += "cd " + shell_words({cwd.string()}) + " && ";
  if (!env.empty()) command += "env " + shell_words(env) + " ";
  command += shell_words({program.string()}) + " " + args + " >" +
             shell_words({(capture / "out").string()}) + " 2>" +
             shell_words({(capture / "err").string()});
  const int raw = std::system(command.c_str());
  ProcessResult result;
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  result.out = slurp(capture / "out");
  result.err = slurp(capture / "err");
  return result;
}

ProcessResult run_dptrain(const std::string& args, const std::filesystem::path& cwd,
                          const std::vector<std::string>& env) {
  return run_program(DPTRAIN_BINARY, args, cwd, env);
}

bool python_torch_present() {
  return run_program("/usr/bin/python3", "-c 'import torch, numpy'").status == 0;
}

namespace {

// scripts/venv.sh's trust rule: the folder, bin/ and pyvenv.cfg this user's, no link, writable by
// nobody else, and bin/python Debian's python3. A venv another user could have written to is not
// run.
bool venv_trusted(const std::filesystem::path& folder) {
  for (const auto& path : {folder, folder / "bin", folder / "pyvenv.cfg"}) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode) || st.st_uid != ::geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return false;
    }
  }
  std::error_code ec;
  const std::string python = std::filesystem::canonical(folder / "bin" / "python", ec).string();
  return !ec && python.rfind("/usr/bin/python3", 0) == 0;
}

}  // namespace

std::filesystem::path venv_python() {
  const char* venv = std::getenv("DPTRAIN_VENV");
  const std::filesystem::path folder = venv && *venv ? venv : DPTRAIN_SOURCE_DIR "/.venv";
  // ctest runs the tests in build/tests/: a relative DPTRAIN_VENV would name another folder than
  // the one scripts/venv.sh made.
  if (folder.is_relative()) {
    throw std::runtime_error("DPTRAIN_VENV=" + folder.string() +
                             " is relative: give its full path");
  }
  return venv_trusted(folder) ? folder / "bin" / "python" : std::filesystem::path();
}

std::vector<std::filesystem::path> pytorch_pythons() {
  // Importing the venv's CUDA torch takes seconds: probe once a process.
  static const std::vector<std::filesystem::path> pythons = [] {
    std::vector<std::filesystem::path> found;
    if (python_torch_present()) found.emplace_back("/usr/bin/python3");
    if (!venv_python().empty() &&
        run_program(venv_python(), "-I -c 'import torch, numpy'").status == 0) {
      found.push_back(venv_python());
    }
    return found;
  }();
  return pythons;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("free_port: could not bind a socket");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

BackgroundRun::BackgroundRun(const std::vector<std::string>& args,
                             const std::vector<std::string>& env,
                             const std::vector<std::string>& launcher) {
  std::vector<std::string> argv_strings = launcher;
  argv_strings.push_back(DPTRAIN_BINARY);
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, (capture_ / "out").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, (capture_ / "err").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // The test runner may ignore SIGINT (a background job); the child must start with the default.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int failed = posix_spawnp(&pid, argv[0], &files, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attributes);
  if (failed != 0) throw std::runtime_error("posix_spawn of dptrain failed");
  pid_ = pid;
}

BackgroundRun::~BackgroundRun() {
  if (reaped_) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

bool BackgroundRun::wait_for_stderr(const std::string& text, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (slurp(capture_ / "err").find(text) != std::string::npos) return true;
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      reaped_ = true;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string BackgroundRun::stderr_text() const {
  return slurp(capture_ / "err");
}

void BackgroundRun::signal(int signal_number) const {
  ::kill(pid_, signal_number);
}

ProcessResult BackgroundRun::finish(double timeout_s) {
  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int raw = 0;
  while (!reaped_) {
    if (::waitpid(pid_, &raw, WNOHANG) == pid_) {
      reaped_ = true;
      result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      break;  // the destructor kills it
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  result.out = slurp(capture_ / "out");
  result.err = slurp(capture_ / "err");
  return result;
}

std::string shell_words(const std::vector<std::string>& args) {
  std::string line;
  for (const auto& a : args) {
    line += line.empty() ? "'" : " '";
    for (const char c : a) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += "'";
  }
  return line;
}

std::vector<int> started_rank_pids(const std::string& log, int rank) {
  static const std::regex started(R"(ddp: rank (\d+) started \(pid (\d+)\))");
  std::vector<int> pids;
  for (std::sregex_iterator it(log.begin(), log.end(), started), end; it != end; ++it) {
    if (rank < 0 || std::stoi((*it)[1]) == rank) pids.push_back(std::stoi((*it)[2]));
  }
  return pids;
}

bool process_alive(int pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  // "pid (comm) S ...": the state follows the last ')'.
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

bool process_ends(int pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (process_alive(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace dptrain::testing
