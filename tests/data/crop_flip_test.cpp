// Random crops and flips in one pass (data/crop_flip.h) give the transforms' batches bit for bit:
// the host loader's against each sample transformed one by one, and the device placement's (the
// CPU as the device) against the host's, for one rank and for each of two ranks' shares, over two
// epochs and from the middle of one; on the real Fashion-MNIST, as IDX files and as a folder of
// its pictures in RGB, through the splits and loaders a training session makes, an eval list
// without draws among them. The lists the one pass cannot take are refused with their place and
// reason.
#include "support/catch.h"

#include "config/load.h"
#include "data/crop_flip.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "data/sources.h"
#include "data/splits.h"
#include "data/transformed_dataset.h"
#include "model/registry.h"
#include "support/fixtures.h"
#include "support/picture_folders.h"

using namespace dptrain;
using namespace dptrain::testing;
using Catch::Matchers::Equals;

namespace {

constexpr int64_t kAugmentSeed = 5;

// Every batch of epoch `epoch` of rank `rank`'s share, through a loader of `placement`.
std::vector<data::Batch> epoch_batches(const std::shared_ptr<const data::Dataset>& train,
                                       data::Placement placement, int world, int rank,
                                       int64_t epoch, int64_t first_batch = 0) {
  data::DistributedSampler::Options shards;
  shards.world_size = world;
  shards.rank = rank;
  shards.seed = kAugmentSeed;
  data::LoaderOptions options;
  options.batch_size = 32 / world;
  options.placement = placement;
  auto loader =
      data::make_loader(train, std::make_shared<data::DistributedSampler>(train->size(), shards),
                        options, torch::kCPU);
  loader->start_epoch_at(epoch, first_batch);
  std::vector<data::Batch> batches;
  while (auto batch = loader->next()) batches.push_back(*batch);
  return batches;
}

std::shared_ptr<const data::TransformedDataset> training_split(
    const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"seed=" + std::to_string(kAugmentSeed)};
  all.insert(all.end(), sets.begin(), sets.end());
  const config::Config config = config::load_config(std::nullopt, all, model::model_names());
  data::OpenedData opened = data::open_data(config.data);
  data::load_data(opened);
  const data::TrainingSplits splits = data::make_splits(config, opened);
  auto transformed = std::dynamic_pointer_cast<const data::TransformedDataset>(splits.train);
  REQUIRE(transformed);
  return transformed;
}

std::string why_not(const std::string& list) {
  const config::Config config =
      config::load_config(std::nullopt, {"data.train_transforms=" + list}, model::model_names());
  std::string why;
  const auto plan =
      data::CropFlip::plan(config.data.train_transforms, 0, "data.train_transforms", &why);
  return plan ? std::string("(it runs)") : why;
}

}  // namespace

TEST_CASE(
    "random crops and flips on the device placement give the host placement's batches bit for "
    "bit, for one rank and two, in every epoch",
    "[data][transforms]") {
  TempDir dir;
  write_real_subset(dir / "idx", 200, 10);
  write_picture_folder(dir / "folder", 200, 100);  // every class in the test split
  const std::string idx = "data.dir=" + (dir / "idx").string();
  const std::vector<std::string> folder = {
      "data.dataset=folder", "data.dir=" + (dir / "folder").string(), "data.channels=3"};
  struct Case {
    std::string name;
    std::vector<std::string> sets;
  };
  const std::vector<Case> cases = {
      {"a reflect-padded crop, then the flip",
       {idx, R"(data.train_transforms=[{"name": "random_crop", "size": 28, "padding": 4,)"
             R"( "padding_mode": "reflect"}, {"name": "random_horizontal_flip"}])"}},
      {"the flip, then an unpadded crop",
       {idx, R"(data.train_transforms=[{"name": "random_horizontal_flip", "p": 0.3},)"
             R"( {"name": "random_crop", "size": [24, 20]}])"}},
      {"a resize, an uneven constant padding, the flip and two normalizes",
       {idx, R"(data.train_transforms=[{"name": "resize", "size": 32}, {"name": "random_crop",)"
             R"( "size": 28, "padding": [2, 1, 3, 0], "fill": 7},)"
             R"( {"name": "random_horizontal_flip"}, {"name": "normalize", "mean": [0.3],)"
             R"( "std": [0.4]}, {"name": "normalize", "mean": [0.1], "std": [2.0]}])"}},
      {"a symmetric padding, and pad_if_needed's on top of it, flipped first",
       {idx, R"(data.train_transforms=[{"name": "random_horizontal_flip"}, {"name":)"
             R"( "random_crop", "size": [30, 34], "padding": [1, 2], "pad_if_needed": true,)"
             R"( "padding_mode": "symmetric"}])"}},
      {"a crop of the whole picture (no draw), then a flip always",
       {idx, R"(data.train_transforms=[{"name": "random_crop", "size": 28, "pad_if_needed":)"
             R"( true}, {"name": "random_horizontal_flip", "p": 1.0}])"}},
      {"an eval list: a resize, a centre crop and a normalize, nothing drawn",
       {idx, R"(data.train_transforms=[{"name": "resize", "size": 36}, {"name": "center_crop",)"
             R"( "size": 30}, {"name": "normalize", "mean": [0.3], "std": [0.4]}])"}},
      {"RGB pictures from a folder, centre-cropped, cropped and flipped, normalized per channel",
       {folder[0], folder[1], folder[2],
        R"(data.train_transforms=[{"name": "center_crop", "size": 26}, {"name": "random_crop",)"
        R"( "size": 24, "padding": 2, "padding_mode": "edge"}, {"name":)"
        R"( "random_horizontal_flip"}, {"name": "normalize", "mean": [0.2, 0.5, 0.7], "std":)"
        R"( [0.3, 0.2, 0.1]}])"}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const auto train = training_split(c.sets);
    // The one pass against the transforms one by one, every sample of two epochs.
    int64_t alone = 0;
    for (const int64_t epoch : {0, 2}) {
      const std::vector<int64_t> order =
          data::DistributedSampler(train->size(), {1, 0, true, kAugmentSeed}).epoch_indices(epoch);
      const auto batches = epoch_batches(train, data::Placement::kHost, 1, 0, epoch);
      for (size_t k = 0; k < batches.size(); ++k) {
        for (int64_t j = 0; j < batches[k].size(); ++j) {
          const int64_t i = order[k * 32 + static_cast<size_t>(j)];
          CHECK(torch::equal(batches[k].images[j], train->sample(i, epoch)));
          ++alone;
        }
      }
    }
    CHECK(alone == 2 * 200);
    int64_t compared = 0;
    for (const int world : {1, 2}) {
      for (int rank = 0; rank < world; ++rank) {
        for (const int64_t epoch : {0, 2}) {
          INFO(world << " ranks, rank " << rank << ", epoch " << epoch);
          const auto host = epoch_batches(train, data::Placement::kHost, world, rank, epoch);
          const auto device = epoch_batches(train, data::Placement::kDevice, world, rank, epoch);
          REQUIRE(host.size() == device.size());
          for (size_t k = 0; k < host.size(); ++k) {
            REQUIRE(host[k].images.sizes() == device[k].images.sizes());
            CHECK(torch::equal(host[k].images, device[k].images));
            CHECK(torch::equal(host[k].labels, device[k].labels));
            ++compared;
          }
          // Taken up after three batches, as a resumed epoch: the rest alike.
          const auto rest = epoch_batches(train, data::Placement::kDevice, world, rank, epoch, 3);
          REQUIRE(rest.size() == host.size() - 3);
          for (size_t k = 0; k < rest.size(); ++k)
            CHECK(torch::equal(rest[k].images, host[k + 3].images));
        }
      }
    }
    CHECK(compared == 2 * 7 + 2 * 2 * 7);  // 200 samples in batches of 32, or two ranks' 16
  }
}

TEST_CASE("the transform lists the device cannot draw are refused with their place and reason",
          "[data][transforms]") {
  CHECK_THAT(why_not(R"([{"name": "random_resized_crop", "size": 28}])"),
             Equals("data.train_transforms[0] (random_resized_crop) cannot run on the device: "
                    "only random_crop and random_horizontal_flip are drawn there"));
  CHECK_THAT(why_not(R"([{"name": "random_crop", "size": 24}, {"name": "resize", "size": 28}])"),
             Equals("data.train_transforms[1] (resize) cannot run on the device: only "
                    "normalizes may follow the random transforms there"));
  CHECK_THAT(why_not(R"([{"name": "normalize", "mean": [0.5], "std": [0.5]},)"
                     R"( {"name": "random_horizontal_flip"}])"),
             Equals("data.train_transforms[0] (normalize) cannot run on the device: a normalize "
                    "before a random transform (the device crops and flips bytes)"));
  CHECK_THAT(why_not(R"([{"name": "random_horizontal_flip"}, {"name": "random_horizontal_flip"}])"),
             Equals("data.train_transforms[1] (random_horizontal_flip) cannot run on the device: "
                    "each random transform is drawn once there"));
  CHECK_THAT(why_not(R"([{"name": "random_horizontal_flip"}, {"name": "random_crop", "size": 28,)"
                     R"( "padding": [1, 0, 2, 0]}])"),
             Equals("data.train_transforms[1] (random_crop) cannot run on the device: a flip "
                    "before a crop padded unevenly left and right (put the flip after it)"));
  CHECK_THAT(why_not(R"([{"name": "random_horizontal_flip"}, {"name": "random_crop", "size": 28,)"
                     R"( "padding": [1, 0, 1, 3]}])"),
             Equals("(it runs)"));  // even left and right: the flip moves nothing
}

TEST_CASE(
    "the device placement declines a padding that would keep samples of more than four times the "
    "crop's pixels, which the host pads by index",
    "[data][transforms]") {
  const auto plan_of = [](const std::string& list) {
    const config::Config config =
        config::load_config(std::nullopt, {"data.train_transforms=" + list}, model::model_names());
    std::string why;
    auto plan =
        data::CropFlip::plan(config.data.train_transforms, 0, "data.train_transforms", &why);
    REQUIRE(plan);
    return *plan;
  };
  CHECK(plan_of(R"([{"name": "random_crop", "size": 28, "padding": 4}])")
            .device_cost({1, 28, 28}, "data.train_transforms")
            .empty());
  CHECK(plan_of(R"([{"name": "random_crop", "size": 28, "padding": 28}])")
            .device_cost({1, 28, 28}, "data.train_transforms") ==
        "data.train_transforms[0] (random_crop) would keep every sample padded to 84x84 on the "
        "device, more than four times the 28x28 pixels it crops");
  // After a resize, from what it makes; pad_if_needed's padding alone stays within the bound.
  CHECK(plan_of(R"([{"name": "resize", "size": 10}, {"name": "random_horizontal_flip"},)"
                R"( {"name": "random_crop", "size": 12, "padding": 10}])")
            .device_cost({1, 28, 28}, "data.train_transforms") ==
        "data.train_transforms[2] (random_crop) would keep every sample padded to 30x30 on the "
        "device, more than four times the 12x12 pixels it crops");
  CHECK(plan_of(R"([{"name": "resize", "size": 10}, {"name": "random_crop", "size": 40,)"
                R"( "pad_if_needed": true}])")
            .device_cost({1, 28, 28}, "data.train_transforms")
            .empty());
}
