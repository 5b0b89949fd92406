// An event file as a resumed run reads it back from its folder, where anything may have been left:
// the TFRecord frames (lengths and masked CRC-32Cs checked) and each record's Event header.
#include <string_view>

#include "serialize/tensorboard_event.h"
#include "serialize/tfrecord.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto scan = dptrain::serialize::scan_tfrecords(bytes);
  if (scan.valid_bytes > size) __builtin_trap();
  for (const auto record : scan.records) {
    if (record.data() < bytes.data() || record.data() + record.size() > bytes.data() + size) {
      __builtin_trap();  // a view outside the bytes read
    }
    dptrain::serialize::decode_event_header(record);
  }
  // The header decoder on its own, fed anything, as a record that passed its CRC could hold.
  dptrain::serialize::decode_event_header(bytes);
  return 0;
}
