// Reader for the IDX format of (Fashion-)MNIST, raw or gzip-compressed: magic, dimensions and
// length are all checked, so a truncated or corrupt file is an error that names it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace dptrain::data {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> values;
};

// Only unsigned-byte arrays (type code 0x08), as (Fashion-)MNIST stores them.
IdxArray read_idx(const std::filesystem::path& path);

}  // namespace dptrain::data
