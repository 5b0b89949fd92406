// A rank's sign of life in the store, and its watchdog while the group forms.
//
// A thread counts up the rank's beat key (distributed/peers.h) every `period`, over a store
// connection of its own, so that when a collective fails the survivors can tell which ranks stopped
// beating, and a rank can tell that the store itself (rank 0's machine) stopped answering.
//
// While armed, the same thread bounds the wait for the group: Gloo's first connect can wait five
// times its timeout and cannot be cancelled, so at the deadline, or as soon as another rank posts
// why it gave up, the watchdog logs the cause and ends the process with the distributed error's
// exit status. Only a rank that is a process of its own arms it (Communicator::join).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "distributed/peers.h"

namespace dptrain::distributed {

class Heartbeat {
 public:
  using Clock = std::chrono::steady_clock;
  // Why the wait ended, with a hint; nullopt: go on waiting.
  struct Verdict {
    std::string message;
    std::string hint;
  };
  // `store_answers`: whether the store took this beat (when not, reading it would only wait).
  using Check = std::function<std::optional<Verdict>(const PeerBook& book, bool store_answers,
                                                     bool past_deadline)>;

  // `book`: over a store connection of the thread's own, whose requests time out within a period
  // or two (a blocked beat must not hold up the watchdog).
  Heartbeat(PeerBook book, int rank, std::chrono::milliseconds period);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // From now on, each beat asks `check` (past_deadline true from `deadline` on) whether to give
  // up; a verdict is logged and the process exits.
  void arm(Clock::time_point deadline, Check check);
  void disarm();

  // How long the store has not taken a beat (zero while it answers).
  std::chrono::milliseconds store_silence() const;
  std::chrono::milliseconds period() const { return period_; }
  // The book over the heartbeat's connection (thread-safe: one request at a time).
  const PeerBook& book() const { return book_; }

 private:
  void run();
  bool beat();  // whether the store took it

  PeerBook book_;
  int rank_;
  int64_t count_ = 0;  // this rank's beats so far: the value others see move
  std::chrono::milliseconds period_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  Clock::time_point last_answer_;
  std::optional<Clock::time_point> deadline_;
  Check check_;
  std::thread thread_;
};

}  // namespace dptrain::distributed
