// TensorBoard's Event messages, encoded by hand: the handful of fields dptrain writes (an event's
// time and step, the file's version, scalars, and text for the text plugin), with the field
// numbers of TensorBoard's event.proto, summary.proto and tensor.proto. A protobuf library and
// its compiler would bring two packages and generated code for five messages; docs/runs.md says
// more. Decoding reads back only what resuming a run needs: each event's step and kind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dptrain::serialize {

struct ScalarValue {
  std::string tag;
  float value = 0;  // Summary.Value.simple_value is a float
};

// The first event of every file: file_version "brain.Event:2".
std::string file_version_event(double wall_time);
std::string scalars_event(double wall_time, int64_t step, const std::vector<ScalarValue>& values);
// A string tensor under `tag` that TensorBoard's text plugin shows as Markdown.
std::string text_event(double wall_time, int64_t step, const std::string& tag,
                       const std::string& markdown);

struct EventHeader {
  double wall_time = 0;
  int64_t step = 0;
  bool has_summary = false;  // false: the file_version event (or one dptrain does not write)
};

// The time and step of an encoded Event; nothing when the bytes are no well-formed message.
std::optional<EventHeader> decode_event_header(std::string_view bytes);

}  // namespace dptrain::serialize
