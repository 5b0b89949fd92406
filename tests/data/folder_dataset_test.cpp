// A folder of real Fashion-MNIST pictures, written here as PGM files in ImageFolder's layout with
// the classes' names as folders, gives the same samples as the IDX files they came from: each
// image bit for bit as the in-memory data set's batch holds it, each label renumbered as
// ImageFolder numbers the sorted class names. A picture of another size is refused, naming it.
#include "data/folder_dataset.h"

#include <algorithm>

#include "core/error.h"
#include "data/classes.h"
#include "data/image_dataset.h"
#include "support/catch.h"
#include "support/fixtures.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

constexpr int64_t kImages = 300;

// "T-shirt/top" cannot name a folder: a user would write "T-shirt_top".
std::string folder_name(std::string name) {
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

// Image i of `reference` as a binary PGM of its rows [0, rows).
std::string pgm_of(const data::ImageDataset& reference, int64_t i, int64_t rows) {
  const data::Batch one = reference.get_batch({i});
  const torch::Tensor pixels =
      (one.images[0][0].narrow(0, 0, rows) * 255).round().to(torch::kUInt8).contiguous();
  return "P5 28 " + std::to_string(rows) + " 255\n" +
         std::string(reinterpret_cast<const char*>(pixels.data_ptr<uint8_t>()),
                     static_cast<size_t>(pixels.numel()));
}

}  // namespace

TEST_CASE(
    "a folder of real pictures gives the IDX data set's images bit for bit, with ImageFolder's "
    "labels, and refuses a picture of another size",
    "[data][folder]") {
  TempDir dir;
  write_real_subset(dir / "idx", kImages, 0);
  const auto reference = data::ImageDataset::from_idx_files(
      dir / "idx" / "train-images-idx3-ubyte.gz", dir / "idx" / "train-labels-idx1-ubyte.gz", 10);
  const auto& names = data::class_names("fashion-mnist");
  const auto root = dir / "train";
  for (int64_t i = 0; i < kImages; ++i) {
    const int64_t label = reference.get_batch({i}).labels[0].item<int64_t>();
    const auto folder = root / folder_name(names[static_cast<size_t>(label)]);
    std::filesystem::create_directories(folder);
    char file[16];
    std::snprintf(file, sizeof file, "%05lld.pgm", static_cast<long long>(i));
    write_text(folder / file, pgm_of(reference, i, 28));
  }
  const data::FolderDataset folder(root, data::list_image_folder(root), 1);
  REQUIRE(folder.size() == kImages);
  CHECK(folder.sample_shape() == std::vector<int64_t>{1, 28, 28});
  std::vector<int64_t> all(static_cast<size_t>(kImages));
  for (int64_t i = 0; i < kImages; ++i) all[static_cast<size_t>(i)] = i;
  const data::Batch ours = folder.get_batch(all);
  const auto& classes = folder.listing().classes();
  for (int64_t i = 0; i < kImages; ++i) {
    CAPTURE(i);
    const std::string file(folder.listing().file(i));
    const int64_t original = std::stoll(file.substr(file.rfind('/') + 1, 5));
    const data::Batch theirs = reference.get_batch({original});
    CHECK(torch::equal(ours.images[i], theirs.images[0]));
    const int64_t label = theirs.labels[0].item<int64_t>();
    CHECK(classes[static_cast<size_t>(ours.labels[i].item<int64_t>())] ==
          folder_name(names[static_cast<size_t>(label)]));
  }
  // Sorted by name, "Ankle boot" is label 0 here and 9 in the IDX files.
  CHECK(classes.front() == "Ankle boot");

  // One picture a row short: refused when its batch is read, naming it.
  const std::string first(folder.listing().file(0));
  write_text(root / first,
             pgm_of(reference, std::stoll(first.substr(first.rfind('/') + 1, 5)), 27));
  try {
    folder.get_batch({0});
    FAIL("read");
  } catch (const core::Error& e) {
    CHECK_THAT(e.what(), ContainsSubstring(first + ": a picture of 28x27, and the data set's are "
                                                   "28x28"));
  }
}
