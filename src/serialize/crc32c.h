// CRC-32C (Castagnoli), the checksum TFRecord frames TensorBoard's event files with. Debian 12
// packages no C++ library for it, and a byte-wise table is a few lines; the tests check it against
// Python's crc32c module.
#pragma once

#include <cstdint>
#include <string_view>

namespace dptrain::serialize {

uint32_t crc32c(std::string_view bytes);

// TFRecord's masked form of it, ((crc >> 15) | (crc << 17)) + 0xa282ead8: a CRC of data that
// itself holds CRCs stays well distributed.
uint32_t masked_crc32c(std::string_view bytes);

}  // namespace dptrain::serialize
