// The live line of the running epoch on a terminal, as Lightning's progress bar shows it: step /
// steps, samples/s, the running training loss, the learning rate, elapsed and remaining time.
// Redrawn in place (carriage return and erase line; blanks instead where no escape codes may be
// written) at most kRedrawsPerSecond times a second, and erased before the epoch's ordinary line
// is printed. Disabled, it writes nothing at all, so that logs of batch jobs and pipes stay as
// they are.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "config/choices.h"

namespace dptrain::train {

// log.progress: auto shows the line when stdout is a terminal.
bool progress_wanted(config::ProgressMode mode);

struct ProgressFigures {
  int64_t epoch = 0;  // 1-based
  int64_t epochs = 0;
  int64_t batch = 0;  // batches done in the epoch
  int64_t batches = 0;
  int64_t samples = 0;  // this rank's samples so far in the epoch
  double loss = 0;      // running mean loss of those samples
  double lr = 0;
  double elapsed_sec = 0;
};

// The text of the line (without the redraw codes), for the figures.
std::string format_progress(const ProgressFigures& f);

// The line while an epoch's parameters are evaluated ("val" or "test" as `what`), which on a busy
// machine takes long enough to look like a hang without one.
struct EvalProgress {
  int64_t epoch = 0;  // 1-based
  int64_t epochs = 0;
  std::string what;
  int64_t batch = 0;  // batches done
  int64_t batches = 0;
  double elapsed_sec = 0;
};
std::string format_progress(const EvalProgress& f);

class LiveProgress {
 public:
  static constexpr int kRedrawsPerSecond = 4;

  // Escape codes only where core::escape_codes_allowed(); blanks over the line elsewhere.
  LiveProgress(std::ostream& out, bool enabled);

  bool enabled() const { return enabled_; }
  // Whether update() would draw now: the first call of an epoch, then a quarter second apart.
  bool due() const;
  void update(const ProgressFigures& figures);
  void update(const EvalProgress& figures);
  // Erases the line, if one is drawn.
  void clear();

 private:
  void erase();
  void draw(const std::string& line);

  std::ostream& out_;
  bool enabled_;
  bool escapes_;
  bool drawn_ = false;
  size_t drawn_width_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace dptrain::train
