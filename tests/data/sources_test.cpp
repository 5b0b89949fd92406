// The data set a config names, opened: a folder of real Fashion-MNIST pictures gives the IDX
// files' samples (its classes numbered as the IDX labels here), its classes, size and a listing
// digest that changes when a picture is renamed; test classes other than train's are refused; the
// facts fill a config, and facts given that differ are refused naming the key; a hold-out over a
// folder is the same view over any Dataset.
#include "data/sources.h"

#include <numeric>

#include "core/error.h"
#include "data/holdout.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/picture_folders.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

config::DataConfig folder_config(const std::filesystem::path& dir) {
  config::DataConfig c;
  c.dataset = config::Dataset::kFolder;
  c.dir = dir.string();
  c.channels = 1;
  return c;
}

// The message of the error that opening (or filling facts) throws; "no error" when none.
template <typename F>
std::string opening_error(F f) {
  try {
    f();
  } catch (const core::Error& e) {
    return e.what();
  }
  return "no error";
}

std::vector<int64_t> every_index_of(const data::Dataset& d) {
  std::vector<int64_t> all(static_cast<size_t>(d.size()));
  std::iota(all.begin(), all.end(), int64_t{0});
  return all;
}

}  // namespace

TEST_CASE("a folder of real pictures opens as the IDX files they came from, classes and all",
          "[data][folder]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 200, 50);
  write_real_subset(dir / "idx", 200, 50);
  const data::OpenedData folder = data::open_data(folder_config(dir / "pictures"));
  config::DataConfig idx_config;
  idx_config.dir = (dir / "idx").string();
  data::OpenedData idx = data::open_data(idx_config);
  CHECK(idx.train == nullptr);  // read once the backend is up
  data::load_data(idx);
  REQUIRE(folder.train->size() == 200);
  REQUIRE(folder.test->size() == 50);
  CHECK(folder.sample_shape == std::vector<int64_t>{1, 28, 28});
  CHECK(folder.classes.front() == "0_T-shirt_top");
  CHECK(folder.classes.back() == "9_Ankle boot");
  CHECK(folder.listing_digest.size() == 64);
  CHECK(idx.listing_digest.empty());
  // ImageFolder lists class by class, so its sample i is not the IDX file's: match by file name.
  for (const auto& [ours, theirs] : {std::pair{folder.train, idx.train}, {folder.test, idx.test}}) {
    const data::Batch all = ours->get_batch(every_index_of(*ours));
    const data::Batch reference = theirs->get_batch(every_index_of(*theirs));
    // Sorted by class, then by name within a class: the labels never fall.
    const torch::Tensor labels = all.labels;
    CHECK(torch::all(labels.slice(0, 1) >= labels.slice(0, 0, -1)).item<bool>());
    CHECK(torch::equal(labels.bincount(torch::Tensor(), 10), reference.labels.bincount({}, 10)));
    // Each class's pictures in the IDX files' order: the sorted names are the indices.
    int64_t matched = 0;
    for (int64_t c = 0; c < 10; ++c) {
      const torch::Tensor theirs_c = reference.images.index({reference.labels == c});
      const torch::Tensor ours_c = all.images.index({labels == c});
      CHECK(torch::equal(ours_c, theirs_c));
      matched += ours_c.size(0);
    }
    CHECK(matched == ours->size());
  }
  config::DataConfig facts = data::with_data_facts(folder_config(dir / "pictures"), folder);
  CHECK(facts.channels == 1);
  CHECK(facts.classes == folder.classes);
  CHECK(facts.image_size == std::vector<int64_t>{28, 28});
  // A fact given that is not the data's.
  facts.classes.back() = "9_Boot";
  const std::string classes_differ = opening_error([&] { data::with_data_facts(facts, folder); });
  CHECK_THAT(classes_differ, ContainsSubstring("data.classes is \"0_T-shirt_top\""));
  CHECK_THAT(classes_differ, ContainsSubstring("\"9_Boot\", and the data in "));
  CHECK_THAT(classes_differ, ContainsSubstring("\"9_Ankle boot\""));
  facts.classes = folder.classes;
  facts.image_size = {32, 32};
  const std::string size_differs = opening_error([&] { data::with_data_facts(facts, folder); });
  CHECK_THAT(size_differs, ContainsSubstring("data.image_size is [32, 32], and the data in "));
  CHECK_THAT(size_differs, ContainsSubstring(" has [28, 28]"));

  // The listing's digest is the names': the same again, another after a rename.
  CHECK(data::open_data(folder_config(dir / "pictures")).listing_digest == folder.listing_digest);
  const auto some_class = dir / "pictures" / "train" / "3_Dress";
  const auto first = std::filesystem::directory_iterator(some_class)->path();
  std::filesystem::rename(first, some_class / "renamed.pgm");
  CHECK(data::open_data(folder_config(dir / "pictures")).listing_digest != folder.listing_digest);
}

TEST_CASE("a folder's splits must have the same classes, and both must be there",
          "[data][folder]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 100, 30);
  std::filesystem::remove_all(dir / "pictures" / "test" / "9_Ankle boot");
  const std::string classes_differ =
      opening_error([&] { data::open_data(folder_config(dir / "pictures")); });
  CHECK_THAT(classes_differ, ContainsSubstring("/pictures/test has the classes \"0_T-shirt_top\""));
  CHECK_THAT(classes_differ, ContainsSubstring("\"8_Bag\", and "));
  CHECK_THAT(classes_differ, ContainsSubstring("/pictures/train has "));
  std::filesystem::remove_all(dir / "pictures" / "test");
  CHECK_THAT(opening_error([&] { data::open_data(folder_config(dir / "pictures")); }),
             ContainsSubstring("/pictures: no folder test in it"));
}

TEST_CASE("a hold-out over a folder gives the folder's own samples", "[data][folder]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 120, 100);
  const data::OpenedData folder = data::open_data(folder_config(dir / "pictures"));
  const data::HeldOut held = data::hold_out(folder.train, 0.25, /*seed=*/7);
  REQUIRE(held.val->size() == 30);
  REQUIRE(held.train->size() == 90);
  const data::Batch whole = folder.train->get_batch(every_index_of(*folder.train));
  const data::Batch val = held.val->get_batch(every_index_of(*held.val));
  const data::Batch rest = held.train->get_batch(every_index_of(*held.train));
  // Every sample of the folder once, in one part or the other, as the folder itself gives it
  // (the first 120 real pictures are all different, so each matches one index alone).
  std::vector<int64_t> seen(120, 0);
  for (const data::Batch* part : {&val, &rest}) {
    for (int64_t i = 0; i < part->size(); ++i) {
      const torch::Tensor same =
          (whole.images == part->images[i]).flatten(1).all(1) & (whole.labels == part->labels[i]);
      REQUIRE(same.sum().item<int64_t>() == 1);
      ++seen[static_cast<size_t>(same.nonzero().item<int64_t>())];
    }
  }
  CHECK(seen == std::vector<int64_t>(120, 1));
  // Kept on a device, the view stores the folder's own values.
  const data::StoredSplit stored = held.val->stored_split();
  CHECK(torch::equal(stored.samples, val.images));
  CHECK(torch::equal(stored.labels, val.labels));
}

TEST_CASE(
    "a folder's test pictures of another size open where both transform lists bring them to one "
    "size, and are refused, naming the picture, where not",
    "[data][folder]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 100, 30);
  PictureFolderOptions cut;
  cut.rows = 20;
  write_picture_folder(dir / "short", 100, 30, cut);
  std::filesystem::remove_all(dir / "pictures" / "test");
  std::filesystem::rename(dir / "short" / "test", dir / "pictures" / "test");
  config::DataConfig c = folder_config(dir / "pictures");
  const std::string refused = opening_error([&] { data::open_data(c); });
  CHECK_THAT(refused, ContainsSubstring(": a picture of 28x20, which data.eval_transforms make "
                                        "28x20, and the training set's first is 28x28, which "
                                        "data.train_transforms make 28x28"));
  config::TransformSpec resize;
  resize.name = config::TransformName::kResize;
  resize.size = {24, 24};
  c.train_transforms = {resize};
  c.eval_transforms = {resize};
  CHECK(opening_error([&] { data::open_data(c); }) == "no error");
}
