// The pieces of a TensorBoard event file: CRC-32C against its published check value and against
// Python's crc32c module, TFRecord frames that a cut or a flipped bit breaks, events whose step
// and time read back, and the hparams plugin's records field by field and against the bytes
// TensorBoard's own protos serialize.
#include <cstring>
#include <random>

#include "serialize/crc32c.h"
#include "serialize/little_endian.h"
#include "serialize/tensorboard_event.h"
#include "serialize/tfrecord.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain::serialize;
using dptrain::testing::run_program;

namespace {

// A protobuf message's fields, read here apart from the module's own reader: varint and fixed64
// fields as numbers, length-delimited ones as bytes.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t scalar = 0;
  std::string bytes;
};

std::vector<Field> fields_of(std::string_view m) {
  std::vector<Field> fields;
  size_t at = 0;
  const auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      REQUIRE(at < m.size());
      const auto b = static_cast<uint8_t>(m[at++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
  };
  while (at < m.size()) {
    Field f;
    const uint64_t key = varint();
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    if (f.wire == 0) {
      f.scalar = varint();
    } else if (f.wire == 1) {
      REQUIRE(m.size() - at >= 8);
      f.scalar = read_le(m, at, 8);
      at += 8;
    } else {
      REQUIRE(f.wire == 2);
      const uint64_t length = varint();
      REQUIRE(length <= m.size() - at);
      f.bytes = std::string(m.substr(at, length));
      at += length;
    }
    fields.push_back(f);
  }
  return fields;
}

std::vector<Field> all(const std::vector<Field>& fields, uint32_t number) {
  std::vector<Field> out;
  for (const auto& f : fields) {
    if (f.number == number) out.push_back(f);
  }
  return out;
}

// The one field `number` holds: present once, with the wire type its .proto declares.
Field only(const std::vector<Field>& fields, uint32_t number, uint32_t wire) {
  const auto matches = all(fields, number);
  INFO("field " << number);
  REQUIRE(matches.size() == 1);
  REQUIRE(matches[0].wire == wire);
  return matches[0];
}

double as_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

struct HParamsRecord {
  double wall_time = 0;
  std::string tag;
  std::string tensor;
  std::string content;  // the serialized HParamsPluginData
};

// Event{wall_time=1, step=2, summary=5{value=1{tag=1, tensor=8, metadata=9{plugin_data=1{
// plugin_name=1, content=2}}}}}: one value, at step 0, of the hparams plugin.
HParamsRecord hparams_record(const std::string& event_bytes) {
  const auto event = fields_of(event_bytes);
  HParamsRecord r;
  r.wall_time = as_double(only(event, 1, 1).scalar);
  CHECK(only(event, 2, 0).scalar == 0);
  const auto summary = fields_of(only(event, 5, 2).bytes);
  const auto value = fields_of(only(summary, 1, 2).bytes);
  r.tag = only(value, 1, 2).bytes;
  r.tensor = only(value, 8, 2).bytes;
  const auto plugin = fields_of(only(fields_of(only(value, 9, 2).bytes), 1, 2).bytes);
  CHECK(only(plugin, 1, 2).bytes == "hparams");
  r.content = only(plugin, 2, 2).bytes;
  return r;
}

const std::vector<HParamValue> kHParams = {
    {"data.pin_memory", false}, {"optim.lr", 0.2}, {"optim.name", std::string("sgd")}};

}  // namespace

TEST_CASE("CRC-32C gives the published check value and TFRecord's mask", "[serialize]") {
  CHECK(crc32c("123456789") == 0xe3069283u);
  CHECK(crc32c("") == 0u);
  const uint32_t crc = crc32c("123456789");
  CHECK(masked_crc32c("123456789") == ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST_CASE("CRC-32C agrees with Python's crc32c module on random bytes", "[serialize]") {
  if (run_program("/usr/bin/python3", "-c 'import crc32c'").status != 0) {
    DPTRAIN_SKIP("needs Debian's python3-crc32c (scripts/setup.sh installs it)");
  }
  std::mt19937 random(7);
  std::string args;
  std::vector<uint32_t> ours;
  for (const size_t length : {1, 3, 8, 63, 64, 1000, 4097}) {
    std::string bytes(length, '\0');
    std::string hex;
    for (char& c : bytes) {
      c = static_cast<char>(random() & 0xff);
      char two[3];
      std::snprintf(two, sizeof two, "%02x", static_cast<uint8_t>(c));
      hex += two;
    }
    args += " " + hex;
    ours.push_back(crc32c(bytes));
  }
  const auto python = run_program(
      "/usr/bin/python3",
      "-c 'import crc32c, sys; print(*[crc32c.crc32c(bytes.fromhex(h)) for h in sys.argv[1:]])'" +
          args);
  REQUIRE(python.status == 0);
  std::string expected;
  for (const uint32_t c : ours) expected += (expected.empty() ? "" : " ") + std::to_string(c);
  CHECK(python.out == expected + "\n");
}

TEST_CASE("TFRecord frames read back, up to the first one cut short or corrupted", "[serialize]") {
  const std::string a = tfrecord_frame("first");
  const std::string b = tfrecord_frame(std::string(300, 'x'));
  const std::string whole = a + b;
  TfRecordScan scan = scan_tfrecords(whole);
  REQUIRE(scan.records.size() == 2);
  CHECK(scan.records[0] == "first");
  CHECK(scan.records[1] == std::string(300, 'x'));
  CHECK(scan.complete);
  CHECK(scan.valid_bytes == whole.size());

  for (size_t cut = a.size() + 1; cut < whole.size(); cut += 37) {
    scan = scan_tfrecords(std::string_view(whole).substr(0, cut));
    CHECK(scan.records.size() == 1);
    CHECK_FALSE(scan.complete);
    CHECK(scan.valid_bytes == a.size());
  }
  for (const size_t flip : {size_t{0}, size_t{9}, a.size() + 20, whole.size() - 1}) {
    std::string bad = whole;
    bad[flip] = static_cast<char>(bad[flip] ^ 0x10);
    scan = scan_tfrecords(bad);
    CHECK(scan.records.size() == (flip < a.size() ? 0u : 1u));
    CHECK_FALSE(scan.complete);
  }
  // A length that claims more than the file holds, under an intact header CRC, is a cut frame,
  // not an allocation.
  std::string huge = tfrecord_frame("y");
  huge[7] = '\x7f';
  const uint32_t header_crc = masked_crc32c(std::string_view(huge).substr(0, 8));
  for (int i = 0; i < 4; ++i) huge[8 + i] = static_cast<char>((header_crc >> (8 * i)) & 0xff);
  scan = scan_tfrecords(huge);
  CHECK(scan.records.empty());
  CHECK_FALSE(scan.complete);
  CHECK(scan.valid_bytes == 0);
}

TEST_CASE("an event's step and time read back, and other bytes are no event", "[serialize]") {
  const auto header =
      decode_event_header(scalars_event(1700000000.25, 123456789012, {{"a/b", 0.5f}}));
  REQUIRE(header);
  CHECK(header->step == 123456789012);
  CHECK(header->wall_time == 1700000000.25);
  CHECK(header->has_summary);
  const auto version = decode_event_header(file_version_event(5.0));
  REQUIRE(version);
  CHECK_FALSE(version->has_summary);
  CHECK(decode_event_header(text_event(1.0, 7, "config", "    {}\n"))->step == 7);
  CHECK_FALSE(decode_event_header("\x0a\xff"));  // a varint cut short
  CHECK_FALSE(
      decode_event_header(std::string("\x2a\x05"
                                      "ab")));  // a length past the end
}

TEST_CASE("the hparams session start holds each value as a google.protobuf.Value of its kind",
          "[serialize]") {
  const std::vector<HParamValue> hparams = {{"optim.lr", 0.2},
                                            {"zero", 0.0},
                                            {"optim.name", std::string("sgd")},
                                            {"empty", std::string()},
                                            {"data.pin_memory", false}};
  const HParamsRecord r = hparams_record(hparams_session_start_event(1700000000.25, hparams));
  CHECK(r.wall_time == 1700000000.25);
  CHECK(r.tag == "_hparams_/session_start_info");
  // TensorBoard's NULL_TENSOR: dtype DT_FLOAT, shape [0].
  CHECK(r.tensor == std::string("\x08\x01\x12\x02\x12\x00", 6));
  // HParamsPluginData: version 0 is protobuf's default, so only session_start_info (3) is there.
  const auto data = fields_of(r.content);
  REQUIRE(data.size() == 1);
  const auto start = fields_of(only(data, 3, 2).bytes);
  CHECK(as_double(only(start, 5, 1).scalar) == 1700000000.25);  // start_time_secs
  const auto entries = all(start, 1);                           // map<string, Value> hparams
  REQUIRE(entries.size() == hparams.size());
  std::vector<std::string> keys;
  for (const auto& e : entries) keys.push_back(only(fields_of(e.bytes), 1, 2).bytes);
  CHECK(keys ==
        std::vector<std::string>{"optim.lr", "zero", "optim.name", "empty", "data.pin_memory"});
  const auto value = [&](size_t i) {
    return fields_of(only(fields_of(entries[i].bytes), 2, 2).bytes);
  };
  // Value's kind is its oneof member: number_value 2, string_value 3, bool_value 4, written even
  // when 0, "" or false.
  CHECK(as_double(only(value(0), 2, 1).scalar) == 0.2);
  CHECK(as_double(only(value(1), 2, 1).scalar) == 0.0);
  CHECK(only(value(2), 3, 2).bytes == "sgd");
  CHECK(only(value(3), 3, 2).bytes.empty());
  CHECK(only(value(4), 4, 0).scalar == 0);
  for (size_t i = 0; i < entries.size(); ++i) CHECK(value(i).size() == 1);
}

TEST_CASE("the hparams experiment names each hyperparameter's type and each metric's tag",
          "[serialize]") {
  const HParamsRecord r = hparams_record(
      hparams_experiment_event(5.5, kHParams, {"epoch/test_acc", "epoch/train_loss"}));
  CHECK(r.wall_time == 5.5);
  CHECK(r.tag == "_hparams_/experiment");
  const auto data = fields_of(r.content);
  REQUIRE(data.size() == 1);
  const auto experiment = fields_of(only(data, 2, 2).bytes);
  const auto infos = all(experiment, 4);
  REQUIRE(infos.size() == 3);
  // HParamInfo: name 1, type 4 (DataType: STRING 1, BOOL 2, FLOAT64 3).
  const std::vector<std::pair<std::string, uint64_t>> expected = {
      {"data.pin_memory", 2}, {"optim.lr", 3}, {"optim.name", 1}};
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto info = fields_of(infos[i].bytes);
    CHECK(only(info, 1, 2).bytes == expected[i].first);
    CHECK(only(info, 4, 0).scalar == expected[i].second);
  }
  // MetricInfo{name=1: MetricName{tag=2}}, no group: the session run's own scalars.
  const auto metrics = all(experiment, 5);
  REQUIRE(metrics.size() == 2);
  const auto metric_name = fields_of(only(fields_of(metrics[1].bytes), 1, 2).bytes);
  CHECK(metric_name.size() == 1);
  CHECK(only(metric_name, 2, 2).bytes == "epoch/train_loss");
}

TEST_CASE("the hparams records are byte for byte what TensorBoard's own protos serialize",
          "[serialize]") {
  // HParamsPluginData(...).SerializeToString(deterministic=True).hex() with tensorboard 2.21's
  // plugin_data_pb2 and api_pb2, for the same experiment and start (map keys in sorted order, as
  // deterministic output has them).
  CHECK(
      hparams_record(hparams_experiment_event(0, kHParams, {"epoch/test_acc", "epoch/train_loss"}))
          .content ==
      from_hex("125d22130a0f646174612e70696e5f6d656d6f72792002220c0a086f7074696d2e6c722003220e0a0a"
               "6f7074696d2e6e616d6520012a120a10120e65706f63682f746573745f6163632a140a1212106570"
               "6f63682f747261696e5f6c6f7373"));
  CHECK(hparams_record(hparams_session_start_event(1700000000.25, kHParams)).content ==
        from_hex("1a4c0a150a0f646174612e70696e5f6d656d6f7279120220000a150a086f7074696d2e6c72120911"
                 "9a9999999999c93f0a130a0a6f7074696d2e6e616d6512051a037367642900001040fc54d941"));
}

TEST_CASE("a resume tells an epoch's figures from the other events", "[serialize]") {
  const auto epoch = decode_event_header(scalars_event(9.0, 40, {{"epoch/epoch", 2}, {"x", 1}}));
  REQUIRE(epoch);
  CHECK(epoch->epoch_figures);
  CHECK(epoch->step == 40);
  CHECK_FALSE(decode_event_header(scalars_event(9.0, 40, {{"step/train_loss", 1}}))->epoch_figures);
  CHECK_FALSE(decode_event_header(scalars_event(9.0, 40, {{"epoch/epochs", 1}}))->epoch_figures);
  CHECK_FALSE(decode_event_header(hparams_session_start_event(9.0, kHParams))->epoch_figures);
  CHECK_FALSE(decode_event_header(file_version_event(9.0))->epoch_figures);
}
