// What the fuzz targets share: the input as a file (the readers under test take paths), and the
// one outcome a bad input may have besides success: a core::Error. Anything else escaping (another
// exception, a crash, a sanitizer report) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace dptrain::fuzz {

// Writes the input to a file of this process's own (same path each call) and returns its path.
std::filesystem::path input_file(const uint8_t* data, size_t size, const std::string& suffix = "");

}  // namespace dptrain::fuzz
