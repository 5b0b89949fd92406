#include "distributed/heartbeat.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "core/error.h"

namespace dptrain::distributed {

Heartbeat::Heartbeat(PeerBook book, int rank, std::chrono::milliseconds period)
    : book_(std::move(book)), rank_(rank), period_(period), last_answer_(Clock::now()) {
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Heartbeat::arm(Clock::time_point deadline, Check check) {
  const std::lock_guard<std::mutex> lock(mutex_);
  deadline_ = deadline;
  check_ = std::move(check);
}

void Heartbeat::disarm() {
  const std::lock_guard<std::mutex> lock(mutex_);
  deadline_.reset();
  check_ = nullptr;
}

std::chrono::milliseconds Heartbeat::store_silence() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto silent = Clock::now() - last_answer_;
  // A beat in flight is not silence yet: the store has a period to answer it.
  if (silent <= 2 * period_) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(silent);
}

bool Heartbeat::beat() {
  const std::string text = std::to_string(++count_);
  try {
    // Through the book's store: a set that blocks while the store is unreachable holds up only
    // this thread.
    book_.set_beat(rank_, text);
    const std::lock_guard<std::mutex> lock(mutex_);
    last_answer_ = Clock::now();
    return true;
  } catch (const std::exception&) {
    return false;  // store_silence() grows
  }
}

void Heartbeat::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const bool answered = beat();
    lock.lock();
    if (check_) {
      const bool past = deadline_ && Clock::now() >= *deadline_;
      const Check check = check_;
      lock.unlock();
      const std::optional<Verdict> verdict = check(book_, answered, past);
      lock.lock();
      // A group that formed (or failed on its own) meanwhile disarmed the watchdog, or the
      // heartbeat is stopping: the verdict came too late to count.
      if (verdict && check_ && !stopping_) {
        spdlog::error("distributed error: {}", verdict->message);
        spdlog::error("hint: {}", verdict->hint);
        spdlog::default_logger()->flush();
        std::_Exit(core::exit_status(core::ErrorCode::kDistributed));
      }
    }
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

}  // namespace dptrain::distributed
