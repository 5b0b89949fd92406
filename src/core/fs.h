// Whole-file reads and atomic writes: a reader never sees a half-written file, and a crash while
// writing leaves the previous version in place.
#pragma once

#include <filesystem>
#include <string>

namespace dptrain::core {

std::string read_text_file(const std::filesystem::path& path);

// Writes to a temporary file beside `path`, flushes it to disk, then renames it over `path`.
void write_file_atomic(const std::filesystem::path& path, const std::string& contents);

}  // namespace dptrain::core
