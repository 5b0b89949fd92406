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

// This process's address space now, in bytes (VmSize of /proc/self/status).
long address_space_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) return std::stol(line.substr(7)) * 1024;
  }
  throw std::runtime_error("no VmSize in /proc/self/status");
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
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    const rlim_t limit = static_cast<rlim_t>(address_space_bytes() + limit_mb * (1L << 20));
    const rlimit ceiling{limit, limit};
    ::setrlimit(RLIMIT_AS, &ceiling);
    const std::string outcome = outcome_of(piece);
    if (::write(pipe_fds[1], outcome.data(), outcome.size()) < 0) ::_exit(2);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string outcome;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) outcome.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "crashed";
  return outcome;
#endif
}

}  // namespace dptrain::testing
