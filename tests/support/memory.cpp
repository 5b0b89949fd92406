#include "support/memory.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <new>
#include <stdexcept>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DPTRAIN_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define DPTRAIN_TEST_ASAN 1
#endif

namespace dptrain::testing {
namespace {

std::string outcome_of(const std::function<void()>& piece) {
  try {
    piece();
    return "returned";
  } catch (const std::bad_alloc&) {
    return "out of memory";
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

// A figure of /proc/self/status ("VmSize", "VmRSS", "VmHWM"), in bytes.
long status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1)) * 1024;
  }
  throw std::runtime_error("no " + field + " in /proc/self/status");
}

long address_space_bytes() {
  return status_bytes("VmSize");
}

// Runs `child` in a forked process and returns the text it wrote, or "crashed".
std::string in_child(const std::function<std::string()>& child) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    const std::string outcome = child();
    if (::write(pipe_fds[1], outcome.data(), outcome.size()) < 0) ::_exit(2);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string outcome;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) outcome.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "crashed";
  return outcome;
}

}  // namespace

bool memory_ceiling_enforced() {
#ifdef DPTRAIN_TEST_ASAN
  return false;
#else
  return true;
#endif
}

std::string run_within_memory(const std::function<void()>& piece, long limit_mb) {
#ifdef DPTRAIN_TEST_ASAN
  (void)limit_mb;
  return outcome_of(piece);
#else
  return in_child([&] {
    const rlim_t limit = static_cast<rlim_t>(address_space_bytes() + limit_mb * (1L << 20));
    const rlimit ceiling{limit, limit};
    ::setrlimit(RLIMIT_AS, &ceiling);
    return outcome_of(piece);
  });
#endif
}

std::string run_within_cpu_time(const std::function<void()>& piece, long seconds) {
  return in_child([&] {
    const rlimit ceiling{static_cast<rlim_t>(seconds), static_cast<rlim_t>(seconds)};
    ::setrlimit(RLIMIT_CPU, &ceiling);
    return outcome_of(piece);
  });
}

std::string run_within_resident_memory(const std::function<void()>& piece, long limit_mb) {
  return in_child([&] {
    std::ofstream("/proc/self/clear_refs") << "5";  // the resident peak starts again from here
    const long before = status_bytes("VmRSS");
    const std::string outcome = outcome_of(piece);
    const long used = status_bytes("VmHWM") - before;
    if (used > limit_mb * (1L << 20)) return "used " + std::to_string(used >> 20) + " MB";
    return outcome;
  });
}

}  // namespace dptrain::testing
