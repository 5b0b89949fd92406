#include "fuzz_input.h"

#include <unistd.h>

#include <fstream>

namespace dptrain::fuzz {

std::filesystem::path input_file(const uint8_t* data, size_t size, const std::string& suffix) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("dptrain-fuzz-" + std::to_string(::getpid()) + suffix);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace dptrain::fuzz
