#include "support/catch.h"

#include "core/error.h"
#include "core/fs.h"
#include "support/fixtures.h"

using dptrain::core::Error;
using dptrain::core::ErrorCode;
using dptrain::testing::TempDir;

TEST_CASE("an atomic write replaces the file whole and leaves no temporary behind", "[core]") {
  TempDir dir;
  const auto path = dir / "summary.json";
  dptrain::core::write_file_atomic(path, "first\n");
  dptrain::core::write_file_atomic(path, "second\n");
  CHECK(dptrain::core::read_text_file(path) == "second\n");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("an atomic write into a missing folder is an I/O error naming the file", "[core]") {
  TempDir dir;
  const auto path = dir / "missing" / "summary.json";
  try {
    dptrain::core::write_file_atomic(path, "x");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kIo);
    CHECK_THAT(e.what(), ContainsSubstring((dir / "missing").string()));
  }
}
