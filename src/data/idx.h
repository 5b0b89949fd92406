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

// The header, and the values of the items [first, first + count) along the first dimension alone:
// those before are read past, a piece at a time, and none after are read. `dims` are the header's,
// `values` hold `count` items. A data error naming the file when they are not all there.
IdxArray read_idx_items(const std::filesystem::path& path, int64_t first, int64_t count);

}  // namespace dptrain::data
