// TFRecord framing, the container of TensorBoard's event files: each record is its length
// (uint64, little-endian), the masked CRC-32C of those 8 bytes, the data, and the data's masked
// CRC-32C. A dozen lines of framing: no library for it is packaged for C++ in Debian 12 (Python's
// tensorboard writes it by hand too).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dptrain::serialize {

// One framed record holding `data`.
std::string tfrecord_frame(std::string_view data);

struct TfRecordScan {
  std::vector<std::string_view> records;  // views into the scanned bytes
  size_t valid_bytes = 0;                 // the frames before the first bad or incomplete one
  bool complete = true;  // false: bytes after valid_bytes are no whole, intact record
};

// The records of a file's bytes, up to the first frame that is cut short or fails a CRC (what a
// process killed mid-write leaves at the end). A length beyond the bytes left is such a frame:
// nothing is allocated for it.
TfRecordScan scan_tfrecords(std::string_view bytes);

}  // namespace dptrain::serialize
