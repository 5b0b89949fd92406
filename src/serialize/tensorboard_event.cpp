#include "serialize/tensorboard_event.h"

#include <cstring>

#include "serialize/little_endian.h"

namespace dptrain::serialize {
namespace {

// Protocol buffers' wire types.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Field numbers, from TensorBoard's .proto files.
constexpr uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1, kValueSimpleValue = 2, kValueTensor = 8, kValueMetadata = 9;
constexpr uint32_t kMetadataPluginData = 1, kPluginName = 1, kPluginContent = 2;
constexpr uint32_t kTensorDtype = 1, kTensorShape = 2, kTensorStringVal = 8;
constexpr uint32_t kShapeDim = 2;
constexpr uint64_t kDtypeFloat = 1, kDtypeString = 7;  // DT_FLOAT, DT_STRING

// The hparams plugin's records (plugin_data.proto, api.proto) and protobuf's struct.proto Value.
constexpr uint32_t kPluginDataExperiment = 2, kPluginDataSessionStart = 3;
constexpr uint32_t kExperimentHParamInfos = 4, kExperimentMetricInfos = 5;
constexpr uint32_t kHParamInfoName = 1, kHParamInfoType = 4;
constexpr uint32_t kMetricInfoName = 1, kMetricNameTag = 2;
constexpr uint32_t kSessionStartHParams = 1, kSessionStartTime = 5;
constexpr uint32_t kMapKey = 1, kMapValue = 2;  // a map<string, Value> entry
constexpr uint32_t kStructNumber = 2, kStructString = 3, kStructBool = 4;
constexpr uint64_t kDataTypeString = 1, kDataTypeBool = 2, kDataTypeFloat64 = 3;  // DataType
constexpr std::string_view kHParamsPlugin = "hparams";
constexpr std::string_view kExperimentTag = "_hparams_/experiment";
constexpr std::string_view kSessionStartTag = "_hparams_/session_start_info";

class Message {
 public:
  void varint(uint32_t field, uint64_t v) {
    key(field, kVarint);
    put_varint(v);
  }
  void fixed64(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    key(field, kFixed64);
    append_le(out_, bits, 8);
  }
  void fixed32(uint32_t field, float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    key(field, kFixed32);
    append_le(out_, bits, 4);
  }
  void bytes(uint32_t field, std::string_view b) {
    key(field, kLengthDelimited);
    put_varint(b.size());
    out_.append(b);
  }
  const std::string& str() const { return out_; }

 private:
  void key(uint32_t field, Wire wire) { put_varint((uint64_t{field} << 3) | wire); }
  void put_varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

Message event_at(double wall_time, int64_t step) {
  Message event;
  event.fixed64(kEventWallTime, wall_time);
  event.varint(kEventStep, static_cast<uint64_t>(step));
  return event;
}

std::string summary_event(double wall_time, int64_t step, const std::vector<Message>& values) {
  Message summary;
  for (const auto& v : values) summary.bytes(kSummaryValue, v.str());
  Message event = event_at(wall_time, step);
  event.bytes(kEventSummary, summary.str());
  return event.str();
}

// One hparams record: a Summary.Value under `tag` whose metadata names the plugin and holds
// HParamsPluginData with `record` in its field `which` (the version, 0, is protobuf's default and
// so absent, as Python writes it). The tensor is TensorBoard's own NULL_TENSOR (an empty float
// vector), what its hparams summaries write and what its reader puts where torch writes none.
std::string hparams_event(double wall_time, std::string_view tag, uint32_t which,
                          const Message& record) {
  Message data;
  data.bytes(which, record.str());
  Message plugin;
  plugin.bytes(kPluginName, kHParamsPlugin);
  plugin.bytes(kPluginContent, data.str());
  Message metadata;
  metadata.bytes(kMetadataPluginData, plugin.str());
  Message dim;  // size 0: protobuf's default, so no bytes
  Message shape;
  shape.bytes(kShapeDim, dim.str());
  Message tensor;
  tensor.varint(kTensorDtype, kDtypeFloat);
  tensor.bytes(kTensorShape, shape.str());
  Message value;
  value.bytes(kValueTag, tag);
  value.bytes(kValueTensor, tensor.str());
  value.bytes(kValueMetadata, metadata.str());
  return summary_event(wall_time, /*step=*/0, {value});
}

// Reads an encoded message one field at a time.
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : bytes_(bytes) {}

  struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    uint64_t value = 0;      // varint and fixed fields
    std::string_view bytes;  // length-delimited fields
  };

  // False at the end, and at bytes that are no field (then malformed() says so).
  bool next(Field& f) {
    if (at_ == bytes_.size()) return false;
    malformed_ = !read_field(f);
    return !malformed_;
  }
  bool malformed() const { return malformed_; }

 private:
  bool read_field(Field& f) {
    uint64_t key = 0;
    if (!varint(key) || (key >> 3) == 0 || (key >> 3) > 0xffffffffu) return false;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    switch (f.wire) {
      case kVarint:
        return varint(f.value);
      case kFixed64:
        return fixed(f.value, 8);
      case kFixed32:
        return fixed(f.value, 4);
      case kLengthDelimited: {
        uint64_t length = 0;
        if (!varint(length) || length > bytes_.size() - at_) return false;
        f.bytes = bytes_.substr(at_, length);
        at_ += length;
        return true;
      }
      default:
        return false;
    }
  }
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && at_ < bytes_.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(bytes_[at_++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool fixed(uint64_t& v, int n) {
    if (bytes_.size() - at_ < static_cast<size_t>(n)) return false;
    v = read_le(bytes_, at_, n);
    at_ += n;
    return true;
  }

  std::string_view bytes_;
  size_t at_ = 0;
  bool malformed_ = false;
};

// Whether an encoded Summary holds a value under `tag`.
bool holds_tag(std::string_view summary, std::string_view tag) {
  FieldReader values(summary);
  FieldReader::Field v;
  while (values.next(v)) {
    if (v.number != kSummaryValue || v.wire != kLengthDelimited) continue;
    FieldReader fields(v.bytes);
    FieldReader::Field f;
    while (fields.next(f)) {
      if (f.number == kValueTag && f.wire == kLengthDelimited && f.bytes == tag) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::string file_version_event(double wall_time) {
  Message event = event_at(wall_time, 0);
  event.bytes(kEventFileVersion, "brain.Event:2");
  return event.str();
}

std::string scalars_event(double wall_time, int64_t step, const std::vector<ScalarValue>& values) {
  std::vector<Message> messages(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    messages[i].bytes(kValueTag, values[i].tag);
    messages[i].fixed32(kValueSimpleValue, values[i].value);
  }
  return summary_event(wall_time, step, messages);
}

std::string text_event(double wall_time, int64_t step, const std::string& tag,
                       const std::string& markdown) {
  Message plugin;
  plugin.bytes(kPluginName, "text");
  Message metadata;
  metadata.bytes(kMetadataPluginData, plugin.str());
  Message tensor;
  tensor.varint(kTensorDtype, kDtypeString);
  tensor.bytes(kTensorShape, "");  // a scalar: no dimensions
  tensor.bytes(kTensorStringVal, markdown);
  Message value;
  value.bytes(kValueTag, tag);
  value.bytes(kValueMetadata, metadata.str());
  value.bytes(kValueTensor, tensor.str());
  return summary_event(wall_time, step, {value});
}

std::string hparams_experiment_event(double wall_time, const std::vector<HParamValue>& hparams,
                                     const std::vector<std::string>& metric_tags) {
  Message experiment;
  for (const auto& h : hparams) {
    // DataType by the variant's alternative: double, std::string, bool.
    static constexpr uint64_t kTypes[] = {kDataTypeFloat64, kDataTypeString, kDataTypeBool};
    Message info;
    info.bytes(kHParamInfoName, h.name);
    info.varint(kHParamInfoType, kTypes[h.value.index()]);
    experiment.bytes(kExperimentHParamInfos, info.str());
  }
  for (const auto& tag : metric_tags) {
    Message name;  // group empty: the scalars are the session run's own
    name.bytes(kMetricNameTag, tag);
    Message info;
    info.bytes(kMetricInfoName, name.str());
    experiment.bytes(kExperimentMetricInfos, info.str());
  }
  return hparams_event(wall_time, kExperimentTag, kPluginDataExperiment, experiment);
}

std::string hparams_session_start_event(double wall_time, const std::vector<HParamValue>& hparams) {
  Message start;
  for (const auto& h : hparams) {
    // A oneof member is written even when it is 0, false or "": that is how the kind is known.
    Message value;
    if (const auto* number = std::get_if<double>(&h.value)) {
      value.fixed64(kStructNumber, *number);
    } else if (const auto* text = std::get_if<std::string>(&h.value)) {
      value.bytes(kStructString, *text);
    } else {
      value.varint(kStructBool, std::get<bool>(h.value) ? 1 : 0);
    }
    Message entry;
    entry.bytes(kMapKey, h.name);
    entry.bytes(kMapValue, value.str());
    start.bytes(kSessionStartHParams, entry.str());
  }
  start.fixed64(kSessionStartTime, wall_time);
  return hparams_event(wall_time, kSessionStartTag, kPluginDataSessionStart, start);
}

std::optional<EventHeader> decode_event_header(std::string_view bytes) {
  EventHeader header;
  FieldReader reader(bytes);
  FieldReader::Field f;
  while (reader.next(f)) {
    if (f.number == kEventWallTime && f.wire == kFixed64) {
      std::memcpy(&header.wall_time, &f.value, sizeof header.wall_time);
    } else if (f.number == kEventStep && f.wire == kVarint) {
      header.step = static_cast<int64_t>(f.value);
    } else if (f.number == kEventSummary && f.wire == kLengthDelimited) {
      header.has_summary = true;
      header.epoch_figures = header.epoch_figures || holds_tag(f.bytes, kEpochTag);
    }
  }
  if (reader.malformed()) return std::nullopt;
  return header;
}

}  // namespace dptrain::serialize
