// The one place dptrain starts and watches children (the launcher's ranks, the sweep's points):
// exit statuses that must not be lost, and a log that must not be a planted FIFO.
#include "launch/supervisor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "core/error.h"
#include "support/catch.h"
#include "support/fixtures.h"

using dptrain::launch::Children;
using dptrain::launch::ChildSpec;
using dptrain::launch::program_spec;
using dptrain::launch::start_child;
using dptrain::launch::wait_for;
using dptrain::testing::TempDir;

namespace {

// SIGCHLD ignored, as some containers' init hands it down; what it was comes back at the end.
class IgnoredSigchld {
 public:
  IgnoredSigchld() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGCHLD, &ignore, &before_);
  }
  ~IgnoredSigchld() { ::sigaction(SIGCHLD, &before_, nullptr); }
  IgnoredSigchld(const IgnoredSigchld&) = delete;
  IgnoredSigchld& operator=(const IgnoredSigchld&) = delete;

 private:
  struct sigaction before_ {};
};

}  // namespace

TEST_CASE(
    "a child started where SIGCHLD was inherited ignored still reports its exit status (the "
    "kernel would reap it unseen)",
    "[launch]") {
  const IgnoredSigchld ignored;
  const pid_t pid = start_child(program_spec("sh", {"-c", "exit 3"}));
  struct sigaction now {};
  ::sigaction(SIGCHLD, nullptr, &now);
  CHECK(now.sa_handler == SIG_DFL);
  CHECK(wait_for(pid) == 3);
}

TEST_CASE("children reaped elsewhere are reported lost and handed over, never as a success",
          "[launch]") {
  // Children waits for any child of this process: ctest runs each test in a process of its own,
  // in which this one is the only child.
  Children children;
  const pid_t pid = start_child(program_spec("true", {}));
  children.add(pid, 7);
  int raw = 0;
  REQUIRE(::waitpid(pid, &raw, 0) == pid);  // reaped by someone else
  CHECK_FALSE(children.reap().has_value());
  CHECK(children.lost());
  const auto forgotten = children.forget();
  CHECK(forgotten == std::map<pid_t, int64_t>{{pid, 7}});
  CHECK(children.empty());
  CHECK_FALSE(children.lost());
}

TEST_CASE("a child's log planted as a FIFO is refused at once, not waited on for a reader",
          "[launch]") {
  TempDir dir;
  const auto log = dir / "rank-0.log";
  REQUIRE(::mkfifo(log.c_str(), 0600) == 0);
  ChildSpec spec = program_spec("true", {});
  spec.log = log;
  CHECK_THROWS_WITH(start_child(spec), ContainsSubstring(log.string() + ": is no regular file"));
  // The same refusal with a reader at the other end (the open then succeeds).
  const int reader = ::open(log.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  CHECK_THROWS_WITH(start_child(spec), ContainsSubstring(log.string() + ": is no regular file"));
  ::close(reader);
}
