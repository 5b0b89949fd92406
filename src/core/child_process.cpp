#include "core/child_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/interrupt.h"

namespace dptrain::core {

pid_t start_program(const std::string& program, const std::vector<std::string>& args,
                    const ChildOptions& options) {
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> pointers;
  for (auto& a : argv) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  int log_fd = -1;
  if (options.log) {
    log_fd =
        ::open(options.log->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      throw Error(ErrorCode::kIo,
                  options.log->string() + ": cannot open the log: " + std::strerror(errno),
                  "check that the folder is writable");
    }
  }
  // Blocked from before fork: a notice that reached the child while it still ran dptrain's
  // handlers would only set a flag in memory that exec throws away. The child sets the default
  // actions while they are blocked, then unblocks them, or holds them across exec.
  sigset_t held, before;
  launcher_held_signals(held);
  ::pthread_sigmask(SIG_BLOCK, &held, &before);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    if (options.own_group) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // dptrain died before the line above
    }
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGUSR1, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, options.hold_signals ? &held : &before, nullptr);
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    if (program.find('/') == std::string::npos) {
      ::execvp(program.c_str(), pointers.data());
    } else {
      ::execv(program.c_str(), pointers.data());
    }
    ::_exit(127);
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (log_fd >= 0) ::close(log_fd);
  if (pid < 0) {
    throw Error(ErrorCode::kRuntime, "could not start " + program + ": " + std::strerror(errno),
                "the machine may be out of processes or memory");
  }
  return pid;
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

}  // namespace dptrain::core
