#include "core/stdout_check.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <streambuf>

#include "core/terminal.h"

namespace dptrain::core {
namespace {

class CheckedStdout : public std::streambuf {
 public:
  CheckedStdout() : line_buffered_(isatty(STDOUT_FILENO) == 1) { setp(buffer_, buffer_ + kSize); }
  int first_error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
      if (line_buffered_ && c == '\n' && !drain()) return traits_type::eof();
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) {
      if (traits_type::eq_int_type(sputc(s[i]), traits_type::eof())) return i;
      if (line_buffered_ && s[i] == '\n' && !drain()) return i + 1;
    }
    return n;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  // Writes what the buffer holds; after an error keeps dropping it (the output is lost anyway).
  bool drain() {
    const char* from = pbase();
    while (error_ == 0 && from < pptr()) {
      const ssize_t wrote = ::write(STDOUT_FILENO, from, static_cast<size_t>(pptr() - from));
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) {
        error_ = wrote < 0 ? errno : EIO;
        break;
      }
      from += wrote;
    }
    setp(buffer_, buffer_ + kSize);
    return error_ == 0;
  }

  static constexpr std::ptrdiff_t kSize = 1 << 16;
  char buffer_[kSize];
  bool line_buffered_;
  int error_ = 0;
};

// Never destroyed: std::cout is flushed at exit, after every static of this file would be gone.
CheckedStdout* g_checked = nullptr;

}  // namespace

void check_stdout_writes() {
  if (g_checked != nullptr) return;
  g_checked = new CheckedStdout();
  std::cout.rdbuf(g_checked);
}

std::optional<std::string> stdout_problem() {
  std::cout.flush();
  errno = 0;
  const bool c_flushed = std::fflush(stdout) == 0 && std::ferror(stdout) == 0;
  const int c_error = errno;
  int error = g_checked != nullptr ? g_checked->first_error() : 0;  // std::cout's first
  if (error == 0 && !c_flushed) error = c_error;                    // else C stdio's
  if (error == 0 && c_flushed) return std::nullopt;
  if (error == EPIPE) return std::nullopt;
  std::error_code ignored;
  const auto target = std::filesystem::read_symlink("/proc/self/fd/1", ignored);
  return "stdout" + (target.empty() ? "" : " (" + printable(target.string()) + ")") + ": " +
         (error != 0 ? std::strerror(error) : "a write failed");
}

}  // namespace dptrain::core
