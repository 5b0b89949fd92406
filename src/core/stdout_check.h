// Whether everything a command printed reached its standard output. A full disk or /dev/full
// fails the writes of `std::cout`, and nothing else would notice: `predict --json > out` would stop
// at 239 of 10,000 lines and exit 0. main routes std::cout through a buffer of its own that keeps
// the first write's error (C's stdout keeps only a flag, and errno is long gone by the end), and
// asks once, on the way out of every command.
#pragma once

#include <optional>
#include <string>

namespace dptrain::core {

// From here on std::cout writes to file descriptor 1 through a buffer that remembers the first
// error; line by line where stdout is a terminal (as C's stdout would), else in blocks. Call once,
// first thing in main.
void check_stdout_writes();

// Flushes std::cout and C's stdout; nothing when every write went through, or when the reader of
// a pipe left (EPIPE: a pager or `head` that has what it wants); else what stdout was and why the
// results were lost ("stdout (/dev/full): No space left on device").
std::optional<std::string> stdout_problem();

}  // namespace dptrain::core
