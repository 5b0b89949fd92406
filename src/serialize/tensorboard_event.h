// TensorBoard's Event messages, encoded by hand: the handful of fields dptrain writes (an event's
// time and step, the file's version, scalars, text for the text plugin, and the hparams plugin's
// experiment and session records), with the field numbers of TensorBoard's event.proto,
// summary.proto, tensor.proto, plugins/hparams/{api,plugin_data}.proto and protobuf's struct.proto.
// A protobuf library and its compiler would bring two packages and generated code for a dozen
// messages; docs/runs.md says more. Decoding reads back only what resuming a run needs: each
// event's step and kind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
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

// One hyperparameter of a run, as TensorBoard's HParams view shows it: a number, a string or a
// bool (google.protobuf.Value's number_value, string_value, bool_value). Pass a std::string, not
// a string literal: a `const char*` would convert to the bool.
struct HParamValue {
  std::string name;
  std::variant<double, std::string, bool> value;
};

// The HParams view reads up to three records from a run, those torch.utils.tensorboard's
// add_hparams writes; dptrain writes the first two (a session end would have to be cut out again
// when a finished run is resumed: TensorBoard keeps the first it reads). Each is an Event at step 0
// whose one Summary.Value carries the plugin's HParamsPluginData in its metadata (and an empty
// tensor, as TensorBoard's own hparams summaries do). The experiment: the columns, each
// hyperparameter's name and type (from its value) and the scalar tags shown as metrics, read from
// the run's own scalars ("epoch/test_acc").
std::string hparams_experiment_event(double wall_time, const std::vector<HParamValue>& hparams,
                                     const std::vector<std::string>& metric_tags);
// The session's start: its row in the view, the hyperparameters' values.
std::string hparams_session_start_event(double wall_time, const std::vector<HParamValue>& hparams);

struct EventHeader {
  double wall_time = 0;
  int64_t step = 0;
  bool has_summary = false;  // false: the file_version event (or one dptrain does not write)
  // An epoch's figures (tag "epoch/epoch"): a resumed run writes those its checkpoint holds.
  bool epoch_figures = false;
};

// The tag an epoch's figures are known by in a file (decode_event_header's epoch_figures).
constexpr const char* kEpochTag = "epoch/epoch";

// The time and step of an encoded Event; nothing when the bytes are no well-formed message.
std::optional<EventHeader> decode_event_header(std::string_view bytes);

}  // namespace dptrain::serialize
