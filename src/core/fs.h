// Whole-file reads and atomic writes: a reader never sees a half-written file, and a crash while
// writing leaves the previous version in place.
#pragma once

#include <filesystem>
#include <string>

namespace dptrain::core {

std::string read_text_file(const std::filesystem::path& path);

// A regular file's bytes, read in one allocation of the size the file system gives it: a device,
// a pipe or a directory is refused, naming the path, so that nothing endless is read.
std::string read_regular_file(const std::filesystem::path& path);

// Makes `dir` (and its parents) when missing, then refuses, naming it, a folder that belongs to
// another user or that every user may write to: whoever can write there could plant a link or a
// file where dptrain writes next. `what` names it in the error ("the output folder").
void ensure_own_folder(const std::filesystem::path& dir, const std::string& what);

// Writes to a temporary file beside `path` (`path.tmp.<pid>.<random>`, created exclusively and
// never through a link), flushes it to disk, renames it over `path`, and flushes the folder.
// `mode`: the file's permissions (0600 for what only this user may read).
void write_file_atomic(const std::filesystem::path& path, const std::string& contents,
                       unsigned mode = 0644);

}  // namespace dptrain::core
