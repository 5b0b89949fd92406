#include "launch/launcher.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/interrupt.h"
#include "distributed/peers.h"
#include "launch/rank_outcome.h"
#include "launch/supervisor.h"
#include "store/client.h"
#include "store/plan.h"
#include "store/server.h"

extern char** environ;

namespace dptrain::launch {
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
      {store::kSecretVariable, rendezvous.secret},
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

pid_t start_rank(const std::vector<std::string>& argv, std::vector<std::string> env,
                 bool quiet_stdout) {
  ChildSpec spec;
  spec.program = "/proc/self/exe";
  spec.argv = argv;
  spec.environment = std::move(env);
  spec.quiet_stdout = quiet_stdout;
  // Its own process group: a terminal's Ctrl-C reaches the launcher alone, which forwards it once
  // (a rank's second SIGINT would kill it at once).
  spec.own_group = true;
  spec.hold_signals = true;
  try {
    return start_child(spec);
  } catch (const core::Error& e) {
    throw core::Error(core::ErrorCode::kDistributed,
                      std::string("could not start a rank: ") + e.what(), e.hint());
  }
}

// A rank that has ended, if any (without waiting). Ranks that ended unseen (their statuses lost:
// see Children::reap) count as failed, never as a success.
std::optional<Outcome> reap_rank(Children& ranks) {
  if (const auto ended = ranks.reap()) {
    return outcome_of(static_cast<int>(ended->id), ended->pid, ended->raw_status);
  }
  if (!ranks.lost()) return std::nullopt;
  const auto unseen = ranks.forget();
  const auto& [pid, rank] = *unseen.begin();
  Outcome lost;
  lost.rank = static_cast<int>(rank);
  lost.pid = pid;
  lost.status = 1;
  lost.what = "ended unseen (its exit status was lost to another waiter)";
  return lost;
}

// The first node's launcher serves the store for the whole job, as torchrun's agent does: on the
// loopback alone when the job is on this machine. With port 0 the system picks a free one, and no
// other process can take it before the ranks start.
std::unique_ptr<store::StoreServer> serve_store(const LocalLaunch& launch,
                                                const Rendezvous& rendezvous) {
  return std::make_unique<store::StoreServer>(launch.nnodes == 1 ? "127.0.0.1" : "",
                                              rendezvous.port, rendezvous.secret);
}

Children start_ranks(const std::vector<std::string>& argv, const LocalLaunch& launch,
                     const Rendezvous& rendezvous, int restart) {
  Children ranks;
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
  // The ranks still running the grace after another stopped on a Ctrl-C, which the launcher then
  // killed.
  std::vector<int64_t> killed_after_interrupt;
};

// Waits for every rank, forwarding Ctrl-C and preemption notices. The first failure stops the
// others (as Ctrl-C asks: SIGTERM would read as a preemption notice), and kills them after the
// grace: a rank stuck in a collective with the failed one would wait for its timeout. After a
// Ctrl-C, a rank that waits in a collective for a stopped or stuck peer ends itself 130 within
// kStuckAfterNotice (core/collective_wait.h); the peer, which never acts on it, is then killed
// here after the grace, and that kill is the Ctrl-C's, not a failure.
JobEnd supervise(Children& ranks, std::chrono::milliseconds grace) {
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
    if (auto ended = reap_rank(ranks)) {
      if (ended->status == kPreemptedStatus) {
        ++end.preempted;  // the others stop after the same step: their vote was collective
      } else if (ended->status != 0) {
        const auto& killed = end.killed_after_interrupt;
        ended->stopped_by_us =
            (sent_sigint && ended->status == kInterruptedStatus) ||
            (ended->status == 128 + SIGKILL &&  // not one that ended itself as the list was made
             std::find(killed.begin(), killed.end(), ended->rank) != killed.end());
        end.failures.push_back(*ended);
        if (!kill_at) {
          if (end.interrupts == 0) ranks.signal_all(SIGINT);
          sent_sigint = true;
          kill_at = std::chrono::steady_clock::now() + grace;
        }
      }
      continue;
    }
    if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
      // A rank that ends itself while this list is made is told apart by its status (not 137).
      if (end.interrupts > 0 && end.killed_after_interrupt.empty()) {
        end.killed_after_interrupt = ranks.ids();
      }
      ranks.signal_all(SIGKILL);
    }
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
  if (end.interrupts > 1) {
    // This launcher's SIGKILL ended the ranks: the job was interrupted, as a single process's
    // 130 says, and not killed (137 would read as the scheduler's or the kernel's doing).
    spdlog::warn("ddp: stopped at once on a second Ctrl-C: the ranks were killed");
    return kInterruptedStatus;
  }
  const bool only_stops = std::all_of(end.failures.begin(), end.failures.end(),
                                      [](const Outcome& o) { return o.stopped_by_us; });
  if (end.interrupts > 0 && !end.killed_after_interrupt.empty() && only_stops) {
    std::string ranks;
    for (const int64_t r : end.killed_after_interrupt) {
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    }
    const bool one = end.killed_after_interrupt.size() == 1;
    spdlog::warn("ddp: stopped on Ctrl-C; rank{} {} did not stop, and {} killed", one ? "" : "s",
                 ranks, one ? "was" : "were");
    return kInterruptedStatus;
  }
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
      distributed::never_arrived(store, key_prefix, launch.nnodes * launch.local_ranks);
  if (missing.empty()) return;
  std::vector<int> nodes;
  for (const int r : missing) {
    const int node = r / launch.local_ranks;
    if (nodes.empty() || nodes.back() != node) nodes.push_back(node);
  }
  std::string node_list;
  for (const int n : nodes) node_list += (node_list.empty() ? "" : ", ") + std::to_string(n);
  spdlog::error("ddp: {} (node{} {}) never reached the rendezvous", distributed::rank_list(missing),
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
                        store::secret_for_job(process_environment(), one_machine,
                                              "node " + std::to_string(launch.node_rank)),
                        ""};
  // Held until every rank has ended: the store, and the launcher's own way into it.
  std::unique_ptr<store::StoreServer> server;
  c10::intrusive_ptr<store::StoreClient> client;
  if (launch.node_rank == 0) {
    server = serve_store(launch, rendezvous);
    rendezvous.port = server->port();
    const store::StoreEndpoint here{"127.0.0.1", rendezvous.port, rendezvous.secret};
    client = c10::make_intrusive<store::StoreClient>(
        [here](std::string&) { return std::optional<store::StoreEndpoint>(here); }, launch.timeout,
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
    Children ranks =
        start_ranks(restart == 0 ? argv : launch.restart_argv, launch, rendezvous, restart);
    const JobEnd end = supervise(ranks, launch.grace);
    if (!end.failures.empty() && client) {
      name_absent_ranks(*client, store::key_prefix(rendezvous.job_id, rendezvous.secret, restart),
                        launch);
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

}  // namespace dptrain::launch
