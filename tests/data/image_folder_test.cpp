// A folder of real Fashion-MNIST pictures in ImageFolder's layout, written here by PIL with what a
// user's folders hold (nested folders whose sorted paths differ from a depth-first walk, names in
// upper case and in UTF-8, hidden files, files that are no pictures, a link to a folder inside),
// is listed exactly as torchvision's ImageFolder lists it: the same classes and the same samples
// with the same labels, in the same order. And each entry ImageFolder would list but never open
// right is refused up front, naming it.
#include "data/image_folder.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/idx.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

// Writes the folder under argv[2] and prints ImageFolder's classes and samples (paths relative
// to it) as JSON.
constexpr char kWriteFolder[] = R"py(
import gzip, json, os, sys
import numpy as np
from PIL import Image
from torchvision.datasets import ImageFolder
data, root = sys.argv[1], sys.argv[2]
with gzip.open(data + "/train-images-idx3-ubyte.gz") as f:
    images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
with gzip.open(data + "/train-labels-idx1-ubyte.gz") as f:
    labels = np.frombuffer(f.read(), np.uint8, offset=8)
names = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
         "Bag", "Ankle boot"]
places = ["", "a", "a-b", "a/b", "A", "a b/c", "été", ".hidden"]
kinds = [("png", "PNG"), ("JPG", "JPEG"), ("pgm", "PPM"), ("jpeg", "JPEG"), ("Png", "PNG")]
for i in range(120):
    folder = os.path.join(root, names[labels[i]], places[i % len(places)])
    os.makedirs(folder, exist_ok=True)
    suffix, kind = kinds[i % len(kinds)]
    stem = ["%03d" % i, "x%d" % i, ".%d" % i, "Ü%d" % i][i % 4]
    Image.fromarray(images[i], "L").save(os.path.join(folder, stem + "." + suffix), kind)
open(os.path.join(root, "Bag", "notes.txt"), "w").write("not a picture")
open(os.path.join(root, "README"), "w").write("not a class")
os.symlink(os.path.join(root, "Coat", "a"), os.path.join(root, "Dress", "coats"))
found = ImageFolder(root)
print(json.dumps({"classes": found.classes,
                  "samples": [[os.path.relpath(p, root), c] for p, c in found.samples]}))
)py";

std::string refusal(const std::filesystem::path& root) {
  try {
    data::list_image_folder(root);
  } catch (const core::Error& e) {
    CHECK(e.code() == core::ErrorCode::kData);
    return e.what();
  }
  FAIL("listed");
  return {};
}

// A folder of two classes, each with one PNG of a real image, for a case to spoil.
std::filesystem::path two_classes(const TempDir& dir, const std::string& name) {
  const auto root = dir / name;
  for (const char* cls : {"one", "two"}) {
    std::filesystem::create_directories(root / cls);
    std::filesystem::copy_file(dir / "picture.png", root / cls / "0.png");
  }
  return root;
}

}  // namespace

TEST_CASE(
    "a folder of real pictures lists as torchvision's ImageFolder lists it: classes, samples, "
    "labels and order",
    "[data][folder]") {
  if (run_program("/usr/bin/python3", "-c 'import torchvision, PIL'").status != 0) {
    DPTRAIN_SKIP("Debian's python3-torchvision is not installed (scripts/setup.sh installs it)");
  }
  TempDir dir;
  write_text(dir / "write.py", kWriteFolder);
  const auto root = dir / "train";
  const auto written = run_program(
      "/usr/bin/python3",
      shell_words({(dir / "write.py").string(), real_data_dir().string(), root.string()}));
  INFO(written.err);
  REQUIRE(written.status == 0);
  const auto theirs = nlohmann::json::parse(written.out);
  const data::FolderListing ours = data::list_image_folder(root);
  CHECK(ours.classes() == theirs.at("classes").get<std::vector<std::string>>());
  const auto& samples = theirs.at("samples");
  // 120 written, and those under Coat/a a second time through Dress/coats.
  size_t linked = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root / "Coat" / "a")) {
    linked += e.is_regular_file() ? 1 : 0;
  }
  REQUIRE(linked > 0);
  REQUIRE(samples.size() == 120 + linked);
  REQUIRE(ours.size() == static_cast<int64_t>(samples.size()));
  for (int64_t i = 0; i < ours.size(); ++i) {
    CAPTURE(i);
    CHECK(std::string(ours.file(i)) == samples[i][0].get<std::string>());
    CHECK(ours.label(i) == samples[i][1].get<int64_t>());
  }
}

TEST_CASE(
    "what ImageFolder would list but never read right is refused naming it: a link out of the "
    "folder or nowhere, a link loop, links fanning out to one folder, a WebP, a FIFO, a name not "
    "UTF-8, an empty class, no class, and what is no picture by name is passed by",
    "[data][folder][security]") {
  TempDir dir;
  write_real_subset(dir / "data", 1, 0);
  // A real image as a PGM, which the listing never opens: only its name and kind matter.
  const data::IdxArray real = data::read_idx(dir / "data" / "train-images-idx3-ubyte.gz");
  write_text(dir / "picture.png",
             "P5 28 28 255\n" + std::string(real.values.begin(), real.values.begin() + 784));

  auto root = two_classes(dir, "out");
  std::filesystem::create_symlink(dir / "picture.png", root / "one" / "1.png");
  CHECK_THAT(refusal(root), ContainsSubstring("one/1.png: a link that leads out of the data "
                                              "folder"));
  root = two_classes(dir, "out-folder");
  std::filesystem::create_symlink(dir / "data", root / "two" / "more");
  CHECK_THAT(refusal(root), ContainsSubstring("two/more: a link that leads out"));
  root = two_classes(dir, "nowhere");
  std::filesystem::create_symlink(root / "gone.png", root / "two" / "1.png");
  CHECK_THAT(refusal(root), ContainsSubstring("two/1.png: a link that leads nowhere"));
  root = two_classes(dir, "circle");
  std::filesystem::create_symlink(root / "two" / "2.png", root / "two" / "1.png");
  std::filesystem::create_symlink(root / "two" / "1.png", root / "two" / "2.png");
  // Either of the two, whichever the listing meets first.
  CHECK_THAT(refusal(root), ContainsSubstring(".png: a link in a loop (links that lead to each "
                                              "other, never to a file)"));
  root = two_classes(dir, "loop");
  std::filesystem::create_symlink(root / "one", root / "one" / "again");
  CHECK_THAT(refusal(root),
             ContainsSubstring("one/again: a link loop: this folder is inside itself"));
  root = two_classes(dir, "webp");
  write_text(root / "two" / "1.WebP", "RIFF");
  CHECK_THAT(refusal(root),
             ContainsSubstring("two/1.WebP: a WebP picture, which dptrain does not decode"));
  root = two_classes(dir, "fifo");
  REQUIRE(::mkfifo((root / "one" / "1.png").c_str(), 0600) == 0);
  CHECK_THAT(refusal(root), ContainsSubstring("one/1.png: no regular file"));
  root = two_classes(dir, "latin1");
  std::filesystem::copy_file(dir / "picture.png", root / "one" / "caf\xe9.png");
  CHECK_THAT(refusal(root), ContainsSubstring("one/caf\\xe9.png: a name that is not UTF-8"));
  // What is neither a folder nor named as a picture is passed by unlooked at, as ImageFolder
  // passes it by: a name not UTF-8, a link to nowhere, a link out of the folder.
  root = two_classes(dir, "passed-by");
  write_text(root / "one" / "caf\xe9.txt", "notes");
  std::filesystem::create_symlink(root / "gone", root / "one" / "notes.txt");
  std::filesystem::create_symlink(dir / "picture.png", root / "two" / "LICENSE");
  write_text(root / "caf\xe9", "beside the classes");
  CHECK(data::list_image_folder(root).size() == 2);
  // Links fanning out to one folder: ImageFolder would list it once per way in.
  root = two_classes(dir, "fan-out");
  std::filesystem::create_directories(root / "one" / "d0");
  std::filesystem::create_directories(root / "one" / "d1");
  std::filesystem::create_symlink(root / "one" / "d1", root / "one" / "d0" / "x");
  std::filesystem::create_symlink(root / "one" / "d1", root / "one" / "d0" / "y");
  CHECK_THAT(refusal(root), ContainsSubstring("one/d0/y: a folder reached a second time within "
                                              "class one, through a link"));
  root = two_classes(dir, "empty");
  std::filesystem::create_directories(root / "three" / "sub");
  write_text(root / "three" / "sub" / "notes.txt", "no picture");
  CHECK_THAT(refusal(root), ContainsSubstring("three: a class folder with no picture in it"));
  root = dir / "none";
  std::filesystem::create_directories(root);
  write_text(root / "0.png", "a file beside no class folder");
  CHECK_THAT(refusal(root), ContainsSubstring("none: no class folder in it"));
  CHECK_THAT(refusal(dir / "missing"), ContainsSubstring("missing: no such folder"));
}
