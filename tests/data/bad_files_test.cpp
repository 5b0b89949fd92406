// data.on_bad_file "skip" over a folder of real pictures among hostile files (a JPEG cut short, a
// PGM cut short, one declaring 65,535 x 65,535, an empty file, a file that is no picture, a link
// out of the data folder, a name that is not UTF-8, a class folder with no picture): each is left
// out and counted, the first named with why, and what is left is the clean folder's samples in
// their order; without "skip" the same folder is refused naming a file.
#include <turbojpeg.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "data/sources.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/picture_folders.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

// The IDX image of a picture folder's PGM file as a JPEG (quality 95), through libjpeg-turbo.
std::string jpeg_of_pgm(const std::filesystem::path& pgm) {
  const std::string bytes = read_bytes(pgm);
  const std::string pixels = bytes.substr(bytes.size() - 28 * 28);
  tjhandle handle = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(handle, reinterpret_cast<const unsigned char*>(pixels.data()), 28, 0, 28,
                      TJPF_GRAY, &out, &size, TJSAMP_GRAY, 95, 0) == 0);
  std::string jpeg(reinterpret_cast<const char*>(out), size);
  tjFree(out);
  tjDestroy(handle);
  return jpeg;
}

// The pixels of a real picture of `pgm`'s folder other than it (the second by name).
std::string second_picture_pixels(const std::filesystem::path& pgm) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(pgm.parent_path())) {
    if (e.path().extension() == ".pgm") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  const std::string bytes = read_bytes(files.at(1));
  return bytes.substr(bytes.size() - 28 * 28);
}

data::OpenedData open_with_policy(const std::filesystem::path& dir, config::BadFiles policy) {
  config::DataConfig c;
  c.dataset = config::Dataset::kFolder;
  c.dir = dir.string();
  c.channels = 1;
  c.on_bad_file = policy;
  c.max_image_pixels = 1000;  // a real picture of 28x56 is then too large; 28x28 ones are not
  return data::open_data(c);
}

data::Batch every_sample_of(const data::Dataset& split) {
  std::vector<int64_t> all(static_cast<size_t>(split.size()));
  std::iota(all.begin(), all.end(), int64_t{0});
  return split.get_batch(all);
}

}  // namespace

TEST_CASE(
    "with data.on_bad_file skip, hostile files among real pictures are left out and counted, and "
    "the rest is the clean folder's samples",
    "[data][folder][security]") {
  TempDir dir;
  write_picture_folder(dir / "clean", 120, 30);
  write_picture_folder(dir / "mixed", 120, 30);
  const std::filesystem::path coat = dir / "mixed" / "train" / picture_class_folder(4, true);
  const std::filesystem::path bag = dir / "mixed" / "test" / picture_class_folder(8, true);
  std::filesystem::path first_coat;
  for (const auto& e : std::filesystem::directory_iterator(coat)) {
    if (first_coat.empty() || e.path() < first_coat) first_coat = e.path();
  }
  const std::string pgm = read_bytes(first_coat);
  const std::string jpeg = jpeg_of_pgm(first_coat);
  // Named to sort after the real pictures ("zz"), in the training and the test split.
  write_text(coat / "zz-cut.jpg", jpeg.substr(0, jpeg.size() / 2));
  write_text(coat / "zz-cut.pgm", pgm.substr(0, pgm.size() - 100));
  write_text(coat / "zz-huge.pgm", "P5 65535 65535 255\n" + pgm.substr(pgm.size() - 784));
  write_text(coat / "zz-empty.png", "");
  // 28x56: two real pictures one above the other, more than the 1,000 pixels allowed here.
  write_text(coat / "zz-tall.pgm",
             "P5 28 56 255\n" + pgm.substr(pgm.size() - 784) + second_picture_pixels(first_coat));
  write_text(bag / "zz-notes.jpg", "these are no pixels\n");
  std::filesystem::create_symlink("/etc/hostname", bag / "zz-out.png");
  write_text(bag / "zz-\xff\xfe.png", pgm);  // a real picture, under a name that is not UTF-8
  // A class folder with nothing in either split, sorted last so that the others keep their labels.
  std::filesystem::create_directories(dir / "mixed" / "train" / "zz-none");
  std::filesystem::create_directories(dir / "mixed" / "test" / "zz-none");

  // Refused without "skip", naming a file.
  try {
    open_with_policy(dir / "mixed", config::BadFiles::kError);
    FAIL("a folder of hostile files opened");
  } catch (const core::Error& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("/mixed/"));
  }

  const data::OpenedData clean = open_with_policy(dir / "clean", config::BadFiles::kError);
  const data::OpenedData mixed = open_with_policy(dir / "mixed", config::BadFiles::kSkip);
  CHECK(mixed.skipped.count == 8);
  REQUIRE(mixed.skipped.examples.size() == 5);
  // The training split's, in its order (the test split's come after, and are checked below).
  CHECK_THAT(mixed.skipped.examples[0],
             ContainsSubstring("zz-cut.jpg: a JPEG that does not decode whole"));
  CHECK_THAT(mixed.skipped.examples[1], ContainsSubstring("zz-cut.pgm: "));
  CHECK_THAT(mixed.skipped.examples[2], ContainsSubstring("zz-empty.png: "));
  CHECK_THAT(mixed.skipped.examples[3],
             ContainsSubstring("zz-huge.pgm: a PGM/PPM whose pixels end after 784 of the "
                               "4294836225 bytes its 65535x65535 header declares"));
  CHECK_THAT(mixed.skipped.examples[4], ContainsSubstring("zz-tall.pgm: an image of 28x56 pixels"));
  CHECK(mixed.skipped.empty_classes == std::vector<std::string>{"train/zz-none", "test/zz-none"});
  // The classes are ImageFolder's, the empty one among them; the samples the clean folder's.
  std::vector<std::string> classes = clean.classes;
  classes.push_back("zz-none");
  CHECK(mixed.classes == classes);
  REQUIRE(mixed.train->size() == clean.train->size());
  REQUIRE(mixed.test->size() == clean.test->size());
  for (const auto& [a, b] : {std::pair{mixed.train, clean.train}, {mixed.test, clean.test}}) {
    const data::Batch got = every_sample_of(*a), want = every_sample_of(*b);
    CHECK(torch::equal(got.images, want.images));
    CHECK(torch::equal(got.labels, want.labels));
  }

  // The test split's alone: what its listing leaves out, in the order of the names, then what
  // does not decode.
  for (const auto& e : std::filesystem::directory_iterator(coat)) {
    if (e.path().filename().string().rfind("zz-", 0) == 0) std::filesystem::remove(e.path());
  }
  const data::OpenedData test_only = open_with_policy(dir / "mixed", config::BadFiles::kSkip);
  CHECK(test_only.skipped.count == 3);
  REQUIRE(test_only.skipped.examples.size() == 3);
  CHECK_THAT(test_only.skipped.examples[0],
             ContainsSubstring("zz-\\xff\\xfe.png: a name that is not UTF-8"));
  CHECK_THAT(test_only.skipped.examples[1],
             ContainsSubstring("zz-out.png: a link that leads out of the data folder"));
  CHECK_THAT(test_only.skipped.examples[2], ContainsSubstring("zz-notes.jpg: "));
}

TEST_CASE("with data.on_bad_file skip, a split with no picture that reads is refused, naming it",
          "[data][folder][security]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 20, 10);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "pictures" / "test")) {
    if (e.is_regular_file()) write_text(e.path(), "");
  }
  try {
    open_with_policy(dir / "pictures", config::BadFiles::kSkip);
    FAIL("a split of empty files opened");
  } catch (const core::Error& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("/pictures/test: no picture in it reads "
                                                        "(10 left out, "));
  }
}
