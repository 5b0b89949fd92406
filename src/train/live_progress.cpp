#include "train/live_progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "core/terminal.h"

namespace dptrain::train {
namespace {

// Carriage return, then ANSI "erase the whole line".
constexpr const char* kEraseLine = "\r\x1b[2K";

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto total = static_cast<long long>(std::llround(seconds));
  char buffer[32];
  if (total >= 3600) {
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60,
                  total % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%02lld:%02lld", total / 60, total % 60);
  }
  return buffer;
}

}  // namespace

bool progress_wanted(config::ProgressMode mode) {
  switch (mode) {
    case config::ProgressMode::kOn:
      return true;
    case config::ProgressMode::kOff:
      return false;
    case config::ProgressMode::kAuto:
      break;
  }
  return core::is_live_terminal(STDOUT_FILENO);
}

std::string format_progress(const ProgressFigures& f) {
  const double per_batch = f.batch > 0 ? f.elapsed_sec / static_cast<double>(f.batch) : NAN;
  const double remaining = per_batch * static_cast<double>(f.batches - f.batch);
  const double rate = f.elapsed_sec > 0 ? static_cast<double>(f.samples) / f.elapsed_sec : 0;
  char buffer[256];
  std::snprintf(buffer, sizeof buffer,
                "epoch %lld/%lld  batch %lld/%lld  %.0f samples/s  loss %.4f  lr %.3g  %s<%s",
                static_cast<long long>(f.epoch), static_cast<long long>(f.epochs),
                static_cast<long long>(f.batch), static_cast<long long>(f.batches), rate, f.loss,
                f.lr, clock_text(f.elapsed_sec).c_str(), clock_text(remaining).c_str());
  return buffer;
}

std::string format_progress(const EvalProgress& f) {
  const double per_batch = f.batch > 0 ? f.elapsed_sec / static_cast<double>(f.batch) : NAN;
  const double remaining = per_batch * static_cast<double>(f.batches - f.batch);
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, "epoch %lld/%lld  evaluating %s  batch %lld/%lld  %s<%s",
                static_cast<long long>(f.epoch), static_cast<long long>(f.epochs), f.what.c_str(),
                static_cast<long long>(f.batch), static_cast<long long>(f.batches),
                clock_text(f.elapsed_sec).c_str(), clock_text(remaining).c_str());
  return buffer;
}

bool LiveProgress::due() const {
  if (!enabled_) return false;
  if (!drawn_) return true;
  return std::chrono::steady_clock::now() - last_draw_ >=
         std::chrono::milliseconds(1000 / kRedrawsPerSecond);
}

LiveProgress::LiveProgress(std::ostream& out, bool enabled)
    : out_(out), enabled_(enabled), escapes_(core::escape_codes_allowed(STDOUT_FILENO)) {}

void LiveProgress::erase() {
  if (escapes_) {
    out_ << kEraseLine;
  } else if (drawn_) {  // without escape codes: blanks over the line drawn last
    out_ << '\r' << std::string(drawn_width_, ' ') << '\r';
  }
}

void LiveProgress::update(const ProgressFigures& figures) {
  if (due()) draw(format_progress(figures));
}

void LiveProgress::update(const EvalProgress& figures) {
  if (due()) draw(format_progress(figures));
}

void LiveProgress::draw(const std::string& line) {
  erase();
  out_ << line << std::flush;
  drawn_width_ = line.size();
  drawn_ = true;
  last_draw_ = std::chrono::steady_clock::now();
}

void LiveProgress::clear() {
  if (!drawn_) return;
  erase();
  out_ << std::flush;
  drawn_ = false;
}

}  // namespace dptrain::train
