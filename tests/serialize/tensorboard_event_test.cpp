// The pieces of a TensorBoard event file: CRC-32C against its published check value and against
// Python's crc32c module, TFRecord frames that a cut or a flipped bit breaks, and events whose
// step and time read back.
#include <random>

#include "serialize/crc32c.h"
#include "serialize/tensorboard_event.h"
#include "serialize/tfrecord.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain::serialize;
using dptrain::testing::run_program;

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

TEST_CASE("an event's step and time read back; other bytes are no event", "[serialize]") {
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
