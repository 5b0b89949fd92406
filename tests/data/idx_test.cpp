#include "support/catch.h"

#include <cstdlib>

#include "core/error.h"
#include "core/fs.h"
#include "data/idx.h"
#include "data/image_dataset.h"
#include "data/locate.h"
#include "support/fixtures.h"

using dptrain::core::Error;
using dptrain::core::ErrorCode;
using dptrain::data::read_idx;
using namespace dptrain::testing;

namespace {

std::string data_error(const std::filesystem::path& path) {
  try {
    read_idx(path);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kData);
    return e.what();
  }
  FAIL("no error was raised");
  return {};
}

const std::vector<uint8_t> kSix = {1, 2, 3, 4, 5, 6};

}  // namespace

TEST_CASE("an IDX file reads back its dimensions and values, raw or gzip", "[data]") {
  TempDir dir;
  const bool gzip = GENERATE(false, true);
  const auto path = dir / (gzip ? "a.idx.gz" : "a.idx");
  (gzip ? write_gzip : write_bytes)(path, idx_bytes({2, 3}, kSix));
  const auto array = read_idx(path);
  CHECK(array.dims == std::vector<int64_t>{2, 3});
  CHECK(array.values == kSix);
}

TEST_CASE("a truncated IDX file is an error naming it and the shortfall", "[data]") {
  TempDir dir;
  auto bytes = idx_bytes({2, 3}, kSix);
  bytes.resize(bytes.size() - 2);
  write_bytes(dir / "short.idx", bytes);
  CHECK(data_error(dir / "short.idx") ==
        (dir / "short.idx").string() + ": truncated: holds 4 values, its header promises 6");
  write_gzip(dir / "short.idx.gz", bytes);
  CHECK(data_error(dir / "short.idx.gz") ==
        (dir / "short.idx.gz").string() + ": truncated: holds 4 values, its header promises 6");
}

TEST_CASE("a gzip stream cut short is an error, not a short read", "[data]") {
  TempDir dir;
  std::vector<uint8_t> values(5000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint8_t>(i * 7);
  write_gzip(dir / "full.gz", idx_bytes({5000}, values));
  auto gz = dptrain::core::read_text_file(dir / "full.gz");
  gz.resize(gz.size() / 2);
  write_text(dir / "cut.gz", gz);
  CHECK_THAT(data_error(dir / "cut.gz"),
             Catch::Matchers::StartsWith((dir / "cut.gz").string() + ": "));
}

TEST_CASE("a wrong magic number is an error naming the file", "[data]") {
  TempDir dir;
  auto bytes = idx_bytes({2, 3}, kSix);
  bytes[0] = 0x1f;
  write_bytes(dir / "bad.idx", bytes);
  CHECK(data_error(dir / "bad.idx") ==
        (dir / "bad.idx").string() + ": bad magic number (not an IDX file)");
  bytes = idx_bytes({2, 3}, kSix);
  bytes[2] = 0x0D;  // float elements
  write_bytes(dir / "float.idx", bytes);
  CHECK(data_error(dir / "float.idx") ==
        (dir / "float.idx").string() +
            ": element type code 13 is not supported (only unsigned bytes, code 8)");
}

TEST_CASE("more data than the header describes is an error", "[data]") {
  TempDir dir;
  auto bytes = idx_bytes({5}, kSix);
  write_bytes(dir / "long.idx", bytes);
  CHECK(data_error(dir / "long.idx") ==
        (dir / "long.idx").string() + ": has data beyond what its header describes");
}

TEST_CASE("an empty file and a missing file are errors naming them", "[data]") {
  TempDir dir;
  write_bytes(dir / "empty.idx", {});
  CHECK(data_error(dir / "empty.idx") ==
        (dir / "empty.idx").string() + ": too short to hold an IDX header");
  CHECK(data_error(dir / "none.idx") == (dir / "none.idx").string() + ": cannot open");
}

TEST_CASE("image and label files with different counts are refused", "[data]") {
  TempDir dir;
  write_bytes(dir / "images", idx_bytes({2, 28, 28}, std::vector<uint8_t>(2 * 784, 0)));
  write_bytes(dir / "labels", idx_bytes({3}, {0, 1, 2}));
  try {
    dptrain::data::ImageDataset::from_idx_files(dir / "images", dir / "labels", 10);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == (dir / "images").string() + " holds 2 images but " +
                                       (dir / "labels").string() + " holds 3 labels");
  }
}

TEST_CASE("a label beyond the class count is refused", "[data]") {
  TempDir dir;
  write_bytes(dir / "images", idx_bytes({2, 28, 28}, std::vector<uint8_t>(2 * 784, 0)));
  write_bytes(dir / "labels", idx_bytes({2}, {3, 12}));
  try {
    dptrain::data::ImageDataset::from_idx_files(dir / "images", dir / "labels", 10);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kData);
    CHECK(std::string(e.what()) ==
          (dir / "labels").string() + ": a label is 12, but there are 10 classes");
  }
}

TEST_CASE("missing data is an error listing every folder searched", "[data]") {
  TempDir dir;
  ::setenv("DPTRAIN_DATA_DIR", dir.path().c_str(), 1);
  try {
    dptrain::data::locate_data_dir("", "mnist");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kData);
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Matchers::StartsWith("no mnist data found; looked in:\n  " +
                                                dir.path().string() +
                                                "\n  data/mnist\n  /usr/share/datasets/mnist\n"));
  }
  ::unsetenv("DPTRAIN_DATA_DIR");
  try {
    dptrain::data::locate_data_dir(dir.path().string(), "fashion-mnist");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), ContainsSubstring("missing train-images-idx3-ubyte[.gz]"));
    CHECK_THAT(e.hint(), ContainsSubstring("apt-get install dataset-fashion-mnist"));
  }
}

TEST_CASE("DPTRAIN_DATA_DIR is searched first", "[data]") {
  TempDir dir;
  write_tiny_dataset(dir.path(), 3, 2);
  ::setenv("DPTRAIN_DATA_DIR", dir.path().c_str(), 1);
  CHECK(dptrain::data::locate_data_dir("", "fashion-mnist") == dir.path());
  ::unsetenv("DPTRAIN_DATA_DIR");
  const auto splits = dptrain::data::load_splits(dir.path());
  CHECK(splits.train->size() == 3);
  CHECK(splits.test->size() == 2);
}
