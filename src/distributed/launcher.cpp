#include "distributed/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/interrupt.h"
#include "distributed/communicator.h"
#include "distributed/rank_outcome.h"
#include "distributed/store_client.h"
#include "distributed/store_plan.h"
#include "distributed/store_server.h"

extern char** environ;

namespace dptrain::distributed {
namespace {

volatile sig_atomic_t g_interrupts = 0;  // SIGINTs received
volatile sig_atomic_t g_preemption = 0;  // the last SIGTERM or SIGUSR1 received
volatile sig_atomic_t g_preemption_count = 0;

void remember_signal(int signal_number) {
  if (signal_number == SIGINT) {
    g_interrupts = g_interrupts + 1;
  } else {
    g_preemption = signal_number;
    g_preemption_count = g_preemption_count + 1;
  }
}

// A rank that stopped for a preemption notice, after a checkpoint (ErrorCode::kPreempted), and one
// that stopped on SIGINT (by its handler, or killed by the signal: a shell's 128 + 2 alike).
const int kPreemptedStatus = core::exit_status(core::ErrorCode::kPreempted);
const int kInterruptedStatus = core::exit_status(core::ErrorCode::kInterrupted);

void catch_signals() {
  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) {
    struct sigaction previous {};
    sigaction(s, nullptr, &previous);
    if (previous.sa_handler == SIG_IGN) continue;  // nohup and friends: leave it ignored
    sigaction(s, &action, nullptr);
  }
}

// Where the ranks find the job's store, and what proves they belong to it.
struct Rendezvous {
  std::string addr;
  uint16_t port = 0;
  std::string secret;
  std::string job_id;
};

// The environment of one rank: ours, plus torchrun's variables. The first node's launcher serves
// the store for every node (TORCHELASTIC_USE_AGENT_STORE, as torchrun's agent does).
std::vector<std::string> rank_environment(const LocalLaunch& launch, int local_rank,
                                          const Rendezvous& rendezvous, int restart) {
  const int world = launch.nnodes * launch.local_ranks;
  const std::map<std::string, std::string> ours = {
      {"RANK", std::to_string(launch.node_rank * launch.local_ranks + local_rank)},
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(launch.local_ranks)},
      {"GROUP_RANK", std::to_string(launch.node_rank)},
      {"MASTER_ADDR", rendezvous.addr},
      {"MASTER_PORT", std::to_string(rendezvous.port)},
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"DPTRAIN_LAUNCHER", "dptrain"},
      {"DPTRAIN_RESTART_COUNT", std::to_string(restart)},
      {kSecretVariable, rendezvous.secret},
      {"DPTRAIN_JOB_ID", rendezvous.job_id},
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (ours.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : ours) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

pid_t start_rank(std::vector<std::string> argv, std::vector<std::string> env, bool quiet_stdout) {
  std::vector<char*> args = pointers(argv);
  std::vector<char*> envp = pointers(env);
  const int null_fd = quiet_stdout ? ::open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
  // Blocked from before fork until the rank can act on them (core/interrupt.h): one that came
  // while the child still ran the launcher's handlers would be lost with the child's memory.
  sigset_t held, before;
  core::launcher_held_signals(held);
  ::pthread_sigmask(SIG_BLOCK, &held, &before);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec. Its own process group: a terminal's Ctrl-C reaches
    // the launcher alone, which forwards it once (a rank's second SIGINT would kill it at once).
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphans, even when the launcher is SIGKILLed
    if (::getppid() != parent) ::_exit(127);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGUSR1, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &held, nullptr);  // exactly these, whatever the launcher blocked
    if (null_fd >= 0) ::dup2(null_fd, STDOUT_FILENO);
    ::execve("/proc/self/exe", args.data(), envp.data());
    ::_exit(127);
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) {
    throw core::Error(core::ErrorCode::kDistributed,
                      std::string("could not start a rank: ") + std::strerror(errno),
                      "the machine may be out of processes or memory");
  }
  return pid;
}

class RankSet {
 public:
  void add(pid_t pid, int rank) { running_[pid] = rank; }
  bool empty() const { return running_.empty(); }
  void signal_all(int signal_number) const {
    for (const auto& [pid, rank] : running_) ::kill(pid, signal_number);
  }
  // A rank that has ended, if any (without waiting).
  std::optional<Outcome> reap() {
    int raw = 0;
    const pid_t pid = ::waitpid(-1, &raw, WNOHANG);
    if (pid <= 0) return std::nullopt;
    const auto it = running_.find(pid);
    if (it == running_.end()) return std::nullopt;
    const int rank = it->second;
    running_.erase(it);
    return outcome_of(rank, pid, raw);
  }

 private:
  std::map<pid_t, int> running_;
};

// The first node's launcher serves the store for the whole job, as torchrun's agent does: on the
// loopback alone when the job is on this machine. With port 0 the system picks a free one, and no
// other process can take it before the ranks start.
std::unique_ptr<StoreServer> serve_store(const LocalLaunch& launch, const Rendezvous& rendezvous) {
  return std::make_unique<StoreServer>(launch.nnodes == 1 ? "127.0.0.1" : "", rendezvous.port,
                                       rendezvous.secret);
}

RankSet start_ranks(const std::vector<std::string>& argv, const LocalLaunch& launch,
                    const Rendezvous& rendezvous, int restart) {
  RankSet ranks;
  for (int local = 0; local < launch.local_ranks; ++local) {
    const int rank = launch.node_rank * launch.local_ranks + local;
    const pid_t pid =
        start_rank(argv, rank_environment(launch, local, rendezvous, restart), rank != 0);
    ranks.add(pid, rank);
    spdlog::info("ddp: rank {} started (pid {})", rank, pid);
  }
  return ranks;
}

// How the ranks ended, as the launcher saw it.
struct JobEnd {
  std::vector<Outcome> failures;
  int preempted = 0;   // ranks that stopped for a preemption notice, with a checkpoint
  int interrupts = 0;  // Ctrl-Cs the launcher received
  int notices = 0;     // preemption notices the launcher received (and forwarded)
};

// Waits for every rank, forwarding Ctrl-C and preemption notices. The first failure stops the
// others (as Ctrl-C asks: SIGTERM would read as a preemption notice), and kills them after the
// grace: a rank stuck in a collective with the failed one would wait for its timeout.
JobEnd supervise(RankSet& ranks, std::chrono::milliseconds grace) {
  JobEnd end;
  int preemptions = 0;
  bool sent_sigint = false;
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  while (!ranks.empty()) {
    if (g_interrupts > end.interrupts) {
      end.interrupts = g_interrupts;
      // A second Ctrl-C means now: as for a single process.
      ranks.signal_all(end.interrupts > 1 ? SIGKILL : SIGINT);
      sent_sigint = true;
    }
    if (g_preemption_count > preemptions) {
      // Every notice goes on: ranks take it once and finish with a checkpoint; a scheduler that
      // will not wait sends SIGKILL itself.
      preemptions = g_preemption_count;
      end.notices = preemptions;
      ranks.signal_all(static_cast<int>(g_preemption));
    }
    if (auto ended = ranks.reap()) {
      if (ended->status == kPreemptedStatus) {
        ++end.preempted;  // the others stop after the same step: their vote was collective
      } else if (ended->status != 0) {
        ended->stopped_by_us = sent_sigint && ended->status == kInterruptedStatus;
        end.failures.push_back(*ended);
        if (!kill_at) {
          if (end.interrupts == 0) ranks.signal_all(SIGINT);
          sent_sigint = true;
          kill_at = std::chrono::steady_clock::now() + grace;
        }
      }
      continue;
    }
    if (kill_at && std::chrono::steady_clock::now() >= *kill_at) ranks.signal_all(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return end;
}

// The job's exit status, said once: success, preemption, or the culprit's failure (after
// `restarts`, the causes of the restarts before it).
int job_status(const JobEnd& end, int world, const std::vector<std::string>& restarts) {
  if (end.failures.empty() && end.preempted > 0) {
    spdlog::warn(
        "ddp: preempted: every rank stopped after the same step, rank 0 with a checkpoint");
    return kPreemptedStatus;
  }
  if (end.failures.empty()) return 0;
  const Outcome& first = culprit(end.failures);
  if (end.interrupts > 0) {
    spdlog::warn("ddp: stopped on Ctrl-C; rank {} {}", first.rank, first.what);
  } else {
    spdlog::error("ddp: rank {} of {} (pid {}) {}; the other ranks were stopped", first.rank, world,
                  first.pid, first.what);
  }
  if (!restarts.empty()) {
    std::string history;
    for (size_t i = 0; i < restarts.size(); ++i) {
      history += (i == 0 ? "" : "; ") + std::string("restart ") + std::to_string(i + 1) +
                 " after rank " + restarts[i];
    }
    spdlog::error("ddp: gave up after {} restart{} ({}): the last failure ends the job",
                  restarts.size(), restarts.size() == 1 ? "" : "s", history);
  }
  return first.status;
}

// After a failed attempt, the first node's launcher names the ranks that never reached the
// rendezvous (a node that was not started, or started with another --master-port).
void name_absent_ranks(c10d::Store& store, const std::string& key_prefix,
                       const LocalLaunch& launch) {
  const std::vector<int> missing =
      never_arrived(store, key_prefix, launch.nnodes * launch.local_ranks);
  if (missing.empty()) return;
  std::vector<int> nodes;
  for (const int r : missing) {
    const int node = r / launch.local_ranks;
    if (nodes.empty() || nodes.back() != node) nodes.push_back(node);
  }
  std::string node_list;
  for (const int n : nodes) node_list += (node_list.empty() ? "" : ", ") + std::to_string(n);
  spdlog::error("ddp: {} (node{} {}) never reached the rendezvous", rank_list(missing),
                nodes.size() == 1 ? "" : "s", node_list);
}

}  // namespace

int run_local_ranks(const std::vector<std::string>& argv, const LocalLaunch& launch) {
  const int world = launch.nnodes * launch.local_ranks;
  // One machine's ranks meet on the loopback, where its store listens, whatever --master-addr says.
  const bool one_machine = launch.nnodes == 1;
  if (one_machine && !launch.master_addr.empty()) {
    spdlog::warn("--master-addr {} is not used: the ranks of one machine meet on the loopback",
                 launch.master_addr);
  }
  Rendezvous rendezvous{one_machine ? "127.0.0.1" : launch.master_addr, launch.master_port,
                        secret_for_job(process_environment(), one_machine,
                                       "node " + std::to_string(launch.node_rank)),
                        ""};
  // Held until every rank has ended: the store, and the launcher's own way into it.
  std::unique_ptr<StoreServer> server;
  c10::intrusive_ptr<StoreClient> store;
  if (launch.node_rank == 0) {
    server = serve_store(launch, rendezvous);
    rendezvous.port = server->port();
    const StoreEndpoint here{"127.0.0.1", rendezvous.port, rendezvous.secret};
    store = c10::make_intrusive<StoreClient>(
        [here](std::string&) { return std::optional<StoreEndpoint>(here); }, launch.timeout,
        launch.timeout);
  }
  rendezvous.job_id = "dptrain-" + std::to_string(rendezvous.port);
  catch_signals();
  core::release_launcher_signals();  // in case this launcher was itself started with them held
  const int first_rank = launch.node_rank * launch.local_ranks;
  spdlog::info("ddp: starting ranks {} to {} of {} on this machine, rendezvous at {}:{}",
               first_rank, first_rank + launch.local_ranks - 1, world, rendezvous.addr,
               rendezvous.port);
  std::vector<std::string> restarts;  // the cause of each, "1 was killed by signal 9 (Killed)"
  for (int restart = 0;; ++restart) {
    RankSet ranks =
        start_ranks(restart == 0 ? argv : launch.restart_argv, launch, rendezvous, restart);
    const JobEnd end = supervise(ranks, launch.grace);
    if (!end.failures.empty() && store) {
      name_absent_ranks(*store, key_prefix(rendezvous.job_id, rendezvous.secret, restart), launch);
    }
    // Ctrl-C and preemption notices end the job (the scheduler is taking the machine, even when a
    // rank stuck in a collective could not stop with a checkpoint); so does the failure after the
    // last restart.
    if (end.failures.empty() || end.interrupts > 0 || end.preempted > 0 || end.notices > 0 ||
        restart >= launch.max_restarts) {
      return job_status(end, world, restarts);
    }
    const Outcome& cause = culprit(end.failures);
    restarts.push_back(std::to_string(cause.rank) + " " + cause.what);
    spdlog::warn(
        "ddp: rank {} {}; restart {} of {}: every rank starts again from the newest checkpoint",
        cause.rank, cause.what, restart + 1, launch.max_restarts);
  }
}

}  // namespace dptrain::distributed
