#include "core/interrupt.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <future>
#include <mutex>
#include <thread>

#include "core/error.h"

namespace dptrain::core {
namespace {

// Lock-free atomics are safe in a signal handler (as sig_atomic_t is), and unlike a volatile
// sig_atomic_t they are also safe to read from the other threads (ThreadSanitizer agrees).
std::atomic<int> g_requested{0};
std::atomic<int> g_preemption_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void on_preemption(int signal) {
  g_preemption_signal = signal;
}

void on_sigint(int /*signal*/) {
  g_requested = 1;
}

void arm() {
  struct sigaction action = {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the second Ctrl-C gets the default action: terminate
  sigaction(SIGINT, &action, nullptr);
}

}  // namespace

void install_interrupt_handler() {
  // A job started with SIGINT ignored (nohup, `cmd &` in a script) keeps ignoring it.
  struct sigaction current = {};
  sigaction(SIGINT, nullptr, &current);
  if (current.sa_handler != SIG_IGN) arm();
}

void install_preemption_handler() {
  struct sigaction action = {};
  action.sa_handler = on_preemption;
  sigemptyset(&action.sa_mask);
  for (const int signal : {SIGTERM, SIGUSR1}) sigaction(signal, &action, nullptr);
}

bool preemption_requested() {
  return g_preemption_signal != 0;
}

std::string preemption_signal_name() {
  return g_preemption_signal == SIGUSR1 ? "SIGUSR1" : "SIGTERM";
}

bool interrupt_requested() {
  return g_requested != 0;
}

void throw_if_interrupted(const std::string& where) {
  if (!interrupt_requested()) return;
  throw Error(ErrorCode::kInterrupted, "interrupted by Ctrl-C (SIGINT) " + where,
              "the finished epochs are in the run folder's metrics.jsonl");
}

void launcher_held_signals(sigset_t& set) {
  sigemptyset(&set);
  for (const int signal : {SIGINT, SIGTERM, SIGUSR1}) sigaddset(&set, signal);
}

void hold_launcher_signals() {
  sigset_t set;
  launcher_held_signals(set);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void release_launcher_signals() {
  sigset_t set;
  launcher_held_signals(set);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void take_signals_on_own_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    hold_launcher_signals();  // in the calling thread, and so in every thread it starts later
    std::promise<void> released;
    std::future<void> ready = released.get_future();
    // The promise lives on in the thread, which never ends: set_value may still be touching it
    // after wait() has returned here.
    std::thread([released = std::move(released)]() mutable {
      pthread_setname_np(pthread_self(), kSignalThreadName);
      // In this thread alone: the only one the kernel can pick. A pending signal's handler has
      // run when pthread_sigmask returns.
      release_launcher_signals();
      released.set_value();
      for (;;) ::pause();  // each signal runs its handler here, and pause returns
    }).detach();
    ready.wait();
  });
}

void clear_interrupt() {
  g_requested = 0;
  arm();
}

}  // namespace dptrain::core
