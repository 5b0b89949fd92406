// Random training transforms draw each sample's parameters from (seed, epoch, index): the loaders
// then assemble every global batch bit for bit alike, whoever assembles it. Checked here on the
// real Fashion-MNIST through the splits and loaders a training session makes (data/splits.h,
// data/loader.h), against each sample transformed by itself: for worker threads and prefetching,
// for 1 to 4 ranks (each taking its share of a global batch, as ddp's do; dp's replicas take
// slices of one process's batch, which is world size 1 here), and for an epoch taken up in its
// middle, as a resumed run takes it. The training runs themselves are compared in
// tests/cli/random_transforms_test.cpp.
#include "support/catch.h"

#include <numeric>

#include "config/load.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "data/sources.h"
#include "data/splits.h"
#include "data/transformed_dataset.h"
#include "model/registry.h"
#include "support/fixtures.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

constexpr int64_t kGlobalBatch = 24;
constexpr int64_t kDrawSeed = 11;

// A batch as a loader delivers it.
struct LoadedRows {
  torch::Tensor images, labels;
};

// The epoch's batches of one rank's share, through a loader of these workers and prefetching.
std::vector<LoadedRows> rank_batches(const std::shared_ptr<const data::Dataset>& train, int world,
                                     int rank, int64_t epoch, int64_t workers, int64_t prefetch,
                                     int64_t skip = 0) {
  data::DistributedSampler::Options shards;
  shards.world_size = world;
  shards.rank = rank;
  shards.seed = kDrawSeed;
  data::LoaderOptions options;
  options.batch_size = kGlobalBatch / world;
  options.num_workers = workers;
  options.prefetch_batches = prefetch;
  auto loader =
      data::make_loader(train, std::make_shared<data::DistributedSampler>(train->size(), shards),
                        options, torch::kCPU);
  loader->start_epoch_at(epoch, skip);  // as a resumed epoch starts after its first batches
  std::vector<LoadedRows> batches;
  while (auto batch = loader->next()) batches.push_back({batch->images, batch->labels});
  return batches;
}

// The global batches the ranks' shares make together: rank r's j-th sample of a batch is the
// global batch's sample r + W * j (data/sampler.h).
std::vector<LoadedRows> global_batches(const std::vector<std::vector<LoadedRows>>& ranks) {
  const int64_t world = static_cast<int64_t>(ranks.size());
  std::vector<LoadedRows> global;
  for (size_t k = 0; k < ranks[0].size(); ++k) {
    const int64_t per_rank = ranks[0][k].labels.size(0);
    LoadedRows rows{torch::empty({world * per_rank, 1, 28, 28}),
                    torch::empty({world * per_rank}, torch::kInt64)};
    for (int64_t r = 0; r < world; ++r) {
      const torch::Tensor at = torch::arange(r, world * per_rank, world);
      rows.images.index_copy_(0, at, ranks[r][k].images);
      rows.labels.index_copy_(0, at, ranks[r][k].labels);
    }
    global.push_back(rows);
  }
  return global;
}

}  // namespace

TEST_CASE(
    "random transforms give every global batch bit for bit alike for any workers, prefetching, "
    "ranks from 1 to 4 and a resumed epoch",
    "[data][transforms]") {
  TempDir dir;
  write_real_subset(dir / "data", 240, 10);
  const config::Config config = config::load_config(
      std::nullopt,
      {"data.dir=" + (dir / "data").string(), "seed=" + std::to_string(kDrawSeed),
       R"(data.train_transforms=[{"name": "random_crop", "size": 28, "padding": 4,)"
       R"( "padding_mode": "reflect"}, {"name": "random_horizontal_flip"}])"},
      model::model_names());
  data::OpenedData opened = data::open_data(config.data);
  data::load_data(opened);
  const data::TrainingSplits splits = data::make_splits(config, opened);
  REQUIRE(splits.random);
  const auto transformed = std::dynamic_pointer_cast<const data::TransformedDataset>(splits.train);
  REQUIRE(transformed);

  for (const int64_t epoch : {0, 1}) {
    INFO("epoch " << epoch);
    // What each global batch must be: its samples in the shuffled order, each transformed alone
    // with its own draws.
    const std::vector<int64_t> order =
        data::DistributedSampler(240, {/*world_size=*/1, /*rank=*/0, /*shuffle=*/true, kDrawSeed})
            .epoch_indices(epoch);
    std::vector<LoadedRows> expected;
    for (int64_t k = 0; k < 240 / kGlobalBatch; ++k) {
      std::vector<torch::Tensor> images;
      std::vector<int64_t> labels;
      for (int64_t j = 0; j < kGlobalBatch; ++j) {
        int64_t label = -1;
        images.push_back(transformed->sample(order[k * kGlobalBatch + j], epoch, &label));
        labels.push_back(label);
      }
      expected.push_back({torch::stack(images), torch::tensor(labels)});
    }
    int64_t compared = 0;
    for (const int world : {1, 2, 3, 4}) {
      for (const auto& [workers, prefetch] : {std::pair<int64_t, int64_t>{0, 0}, {2, 0}, {2, 3}}) {
        INFO(world << " ranks, " << workers << " workers, prefetch " << prefetch);
        std::vector<std::vector<LoadedRows>> ranks;
        for (int r = 0; r < world; ++r) {
          ranks.push_back(rank_batches(splits.train, world, r, epoch, workers, prefetch));
        }
        const std::vector<LoadedRows> global = global_batches(ranks);
        REQUIRE(global.size() == expected.size());
        for (size_t k = 0; k < global.size(); ++k) {
          CHECK(torch::equal(global[k].images, expected[k].images));
          CHECK(torch::equal(global[k].labels, expected[k].labels));
          ++compared;
        }
      }
    }
    CHECK(compared == 4 * 3 * 10);
    // Taken up after its 4th batch, as a resume from a checkpoint there takes it.
    const std::vector<LoadedRows> rest = rank_batches(splits.train, 2, 1, epoch, 2, 3, /*skip=*/4);
    const std::vector<LoadedRows> whole = rank_batches(splits.train, 2, 1, epoch, 0, 0);
    REQUIRE(rest.size() == 6);
    for (size_t k = 0; k < rest.size(); ++k)
      CHECK(torch::equal(rest[k].images, whole[k + 4].images));
  }
  // The draws are the epoch's: the same sample comes out otherwise in another epoch (of 12
  // samples, at least one crop or flip differs), and the same in the same epoch.
  int64_t differ = 0;
  for (int64_t i = 0; i < 12; ++i) {
    CHECK(torch::equal(transformed->sample(i, 0), transformed->sample(i, 0)));
    differ += !torch::equal(transformed->sample(i, 0), transformed->sample(i, 1));
  }
  CHECK(differ > 0);
}
