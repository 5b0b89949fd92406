#include "launch/supervisor.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/interrupt.h"

namespace dptrain::launch {
namespace {

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Never through a link, and never a FIFO or device that someone planted there: opening a FIFO
// for writing would wait for a reader for ever.
int open_log(const std::filesystem::path& log) {
  const int fd = ::open(log.c_str(),
                        O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
  struct stat st {};
  // ENXIO: a FIFO that nobody reads, which a non-blocking open refuses.
  if ((fd < 0 && errno == ENXIO) || (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)))) {
    if (fd >= 0) ::close(fd);
    throw core::Error(core::ErrorCode::kIo, log.string() + ": is no regular file",
                      "remove it, or choose another output folder");
  }
  if (fd < 0) {
    throw core::Error(core::ErrorCode::kIo,
                      log.string() + ": cannot open the log: " + std::strerror(errno),
                      "check that the folder is writable");
  }
  ::fcntl(fd, F_SETFL, O_APPEND);  // writes may block again, as to any file
  return fd;
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void become(const ChildSpec& spec, char* const* argv, char* const* envp, int out_fd,
                         pid_t parent, const sigset_t& held, const sigset_t& before) {
  if (spec.own_group) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);       // no orphans, even when dptrain is SIGKILLed
    if (::getppid() != parent) ::_exit(127);  // dptrain died before the line above
  }
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGUSR1, SIG_DFL);
  // `before` less the held three: a training process keeps them blocked on all its threads but
  // one (core/interrupt.h), and its children must not inherit that.
  sigset_t released = before;
  for (int signal = 1; signal < NSIG; ++signal) {
    if (::sigismember(&held, signal) == 1) ::sigdelset(&released, signal);
  }
  ::sigprocmask(SIG_SETMASK, spec.hold_signals ? &held : &released, nullptr);
  // Where dptrain started with stdout or stderr closed, the log took that number: dup2 onto
  // itself would keep it close-on-exec, and the child would start without it.
  for (const int target : {STDOUT_FILENO, STDERR_FILENO}) {
    if (out_fd < 0 || (target == STDERR_FILENO && !spec.log)) continue;
    if (out_fd == target) {
      ::fcntl(target, F_SETFD, 0);
    } else {
      ::dup2(out_fd, target);
    }
  }
  const bool search = spec.program.find('/') == std::string::npos;
  if (envp != nullptr) {
    search ? ::execvpe(spec.program.c_str(), argv, envp)
           : ::execve(spec.program.c_str(), argv, envp);
  } else {
    search ? ::execvp(spec.program.c_str(), argv) : ::execv(spec.program.c_str(), argv);
  }
  ::_exit(127);
}

}  // namespace

pid_t start_child(const ChildSpec& spec) {
  // A SIGCHLD that this process inherited ignored (some containers' init, nohup-like wrappers)
  // has the kernel reap children unseen: their exit statuses, which the supervisor reports, would
  // be lost.
  struct sigaction child {};
  if (::sigaction(SIGCHLD, nullptr, &child) == 0 && child.sa_handler == SIG_IGN) {
    ::signal(SIGCHLD, SIG_DFL);
  }
  std::vector<std::string> argv = spec.argv;
  std::vector<std::string> env = spec.environment.value_or(std::vector<std::string>{});
  const std::vector<char*> args = pointers(argv);
  const std::vector<char*> envp = pointers(env);
  int out_fd = -1;
  if (spec.log) {
    out_fd = open_log(*spec.log);
  } else if (spec.quiet_stdout) {
    out_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  }
  // Blocked from before fork: a notice that reached the child while it still ran dptrain's
  // handlers would only set a flag in memory that exec throws away. The child sets the default
  // actions while they are blocked, then unblocks them, or holds them across exec.
  sigset_t held, before;
  core::launcher_held_signals(held);
  ::pthread_sigmask(SIG_BLOCK, &held, &before);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    become(spec, args.data(), spec.environment ? envp.data() : nullptr, out_fd, parent, held,
           before);
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (out_fd >= 0) ::close(out_fd);
  if (pid < 0) {
    throw core::Error(core::ErrorCode::kRuntime,
                      "could not start " + spec.program + ": " + std::strerror(errno),
                      "the machine may be out of processes or memory");
  }
  return pid;
}

ChildSpec program_spec(const std::string& program, const std::vector<std::string>& args) {
  ChildSpec spec;
  spec.program = program;
  spec.argv = {program};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  return spec;
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

int wait_for(pid_t pid) {
  int raw = 0;
  while (::waitpid(pid, &raw, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return exit_status_of(raw);
}

std::vector<int64_t> Children::ids() const {
  std::vector<int64_t> ids;
  for (const auto& [pid, id] : running_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

void Children::signal_all(int signal_number) const {
  for (const auto& [pid, id] : running_) ::kill(pid, signal_number);
}

std::optional<Children::Ended> Children::reap() {
  for (;;) {
    int raw = 0;
    const pid_t pid = ::waitpid(-1, &raw, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) {  // no child left to wait for (ECHILD): none of ours can still run
      lost_ = !running_.empty();
      return std::nullopt;
    }
    if (pid == 0) return std::nullopt;
    const auto it = running_.find(pid);
    if (it == running_.end()) continue;  // a child of this process that is not in this set
    const Ended ended{it->second, pid, raw};
    running_.erase(it);
    return ended;
  }
}

std::map<pid_t, int64_t> Children::forget() {
  lost_ = false;
  return std::exchange(running_, {});
}

void Children::stop_all(int signal_number, std::chrono::milliseconds grace) {
  signal_all(signal_number);
  const auto kill_at = std::chrono::steady_clock::now() + grace;
  while (!running_.empty() && std::chrono::steady_clock::now() < kill_at) {
    if (reap()) continue;
    if (lost_) forget();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  signal_all(SIGKILL);
  for (const auto& [pid, id] : running_) wait_for(pid);
  running_.clear();
}

}  // namespace dptrain::launch
