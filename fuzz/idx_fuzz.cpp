// The IDX reader on arbitrary bytes, raw or gzip (it tells them apart by content).
#include "core/error.h"
#include "data/idx.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dptrain::data::read_idx(dptrain::fuzz::input_file(data, size));
  } catch (const dptrain::core::Error&) {
  }
  return 0;
}
