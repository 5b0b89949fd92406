#include "support/catch.h"

#include <algorithm>
#include <map>

#include "data/sampler.h"

using namespace dptrain::data;

namespace {

// How often each index appears across every rank's share of one epoch.
std::map<int64_t, int> counts_over_ranks(int64_t n, int64_t world, bool drop_last, int64_t epoch) {
  std::map<int64_t, int> counts;
  for (int64_t rank = 0; rank < world; ++rank) {
    DistributedSampler::Options o;
    o.world_size = world;
    o.rank = rank;
    o.seed = 5;
    o.drop_last = drop_last;
    const DistributedSampler sampler(n, o);
    const auto mine = sampler.epoch_indices(epoch);
    REQUIRE(static_cast<int64_t>(mine.size()) == sampler.size());
    for (const int64_t i : mine) ++counts[i];
  }
  return counts;
}

}  // namespace

TEST_CASE("the random sampler draws torch.randperm from seed + epoch", "[data]") {
  // Golden values: torch.randperm(10, generator=torch.Generator().manual_seed(42 + epoch)),
  // PyTorch 1.13.
  RandomSampler sampler(10, 42);
  CHECK(sampler.epoch_indices(0) == std::vector<int64_t>{2, 6, 1, 8, 4, 5, 0, 9, 3, 7});
  CHECK(sampler.epoch_indices(1) == std::vector<int64_t>{8, 4, 9, 0, 5, 1, 6, 7, 2, 3});
  const auto big = RandomSampler(60000, 7).epoch_indices(0);
  CHECK(std::vector<int64_t>(big.begin(), big.begin() + 4) ==
        std::vector<int64_t>{21615, 50166, 37383, 3791});
}

TEST_CASE("each epoch visits every index exactly once, in a new order", "[data]") {
  const RandomSampler sampler(1000, 3);
  const auto a = sampler.epoch_indices(0);
  const auto b = sampler.epoch_indices(1);
  CHECK(a != b);
  CHECK(a == sampler.epoch_indices(0));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) REQUIRE(sorted[i] == i);
}

TEST_CASE("the distributed sampler gives each rank what torch's DistributedSampler does",
          "[data]") {
  // Golden values: DistributedSampler(range(10), num_replicas=3, rank=r, seed=42,
  // drop_last=...) after set_epoch(1), PyTorch 1.13.
  auto share = [](int64_t n, int64_t rank, bool shuffle, bool drop_last) {
    DistributedSampler::Options o;
    o.world_size = 3;
    o.rank = rank;
    o.shuffle = shuffle;
    o.seed = 42;
    o.drop_last = drop_last;
    return DistributedSampler(n, o).epoch_indices(1);
  };
  using V = std::vector<int64_t>;
  CHECK(share(10, 0, true, false) == V{8, 0, 6, 3});
  CHECK(share(10, 1, true, false) == V{4, 5, 7, 8});  // 8 again: padding from the start
  CHECK(share(10, 2, true, false) == V{9, 1, 2, 4});
  CHECK(share(10, 0, true, true) == V{8, 0, 6});
  CHECK(share(10, 1, true, true) == V{4, 5, 7});
  CHECK(share(10, 2, true, true) == V{9, 1, 2});
  // Fewer samples than ranks: the order repeats as often as needed.
  CHECK(share(2, 0, false, false) == V{0});
  CHECK(share(2, 1, false, false) == V{1});
  CHECK(share(2, 2, false, false) == V{0});
}

TEST_CASE("across 1 to 3 ranks every sample is seen once an epoch, padding aside", "[data]") {
  for (const int64_t n : {246, 250, 257}) {
    for (int64_t world = 1; world <= 3; ++world) {
      INFO("n " << n << ", world " << world);
      const int64_t padded = (n + world - 1) / world * world;
      const auto counts = counts_over_ranks(n, world, /*drop_last=*/false, /*epoch=*/2);
      REQUIRE(static_cast<int64_t>(counts.size()) == n);
      int64_t total = 0, twice = 0;
      for (const auto& [index, count] : counts) {
        REQUIRE((count == 1 || count == 2));
        total += count;
        twice += count == 2;
      }
      CHECK(total == padded);
      CHECK(twice == padded - n);
      // drop_last: no sample twice, and only the remainder left out.
      const auto dropped = counts_over_ranks(n, world, /*drop_last=*/true, /*epoch=*/2);
      CHECK(static_cast<int64_t>(dropped.size()) == n / world * world);
      for (const auto& [index, count] : dropped) REQUIRE(count == 1);
    }
  }
}

TEST_CASE("the ranks' k-th batches together are the k-th global batch", "[data]") {
  // d2l: W ranks with B / W samples each make the same optimisation as one device with B.
  const int64_t n = 60, world = 3, global_batch = 12, local_batch = global_batch / world;
  const auto global = RandomSampler(n, 9).epoch_indices(4);
  std::vector<std::vector<int64_t>> shares;
  for (int64_t rank = 0; rank < world; ++rank) {
    DistributedSampler::Options o;
    o.world_size = world;
    o.rank = rank;
    o.seed = 9;
    shares.push_back(DistributedSampler(n, o).epoch_indices(4));
  }
  for (int64_t k = 0; k < n / global_batch; ++k) {
    std::vector<int64_t> together,
        expected(global.begin() + k * global_batch, global.begin() + (k + 1) * global_batch);
    for (const auto& share : shares) {
      together.insert(together.end(), share.begin() + k * local_batch,
                      share.begin() + (k + 1) * local_batch);
    }
    std::sort(together.begin(), together.end());
    std::sort(expected.begin(), expected.end());
    CHECK(together == expected);
  }
}

TEST_CASE("evaluation shards cover the test set exactly once, unpadded", "[data]") {
  for (int64_t world = 1; world <= 4; ++world) {
    std::vector<int64_t> all;
    for (int64_t rank = 0; rank < world; ++rank) {
      const ShardSampler shard(10, world, rank);
      const auto mine = shard.epoch_indices(0);
      CHECK(static_cast<int64_t>(mine.size()) == shard.size());
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::sort(all.begin(), all.end());
    CHECK(all == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  CHECK(ShardSampler(10, 4, 1).epoch_indices(0) == std::vector<int64_t>{1, 5, 9});
  CHECK(ShardSampler(2, 3, 2).size() == 0);
}
