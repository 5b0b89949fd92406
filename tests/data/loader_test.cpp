#include "support/catch.h"

#include <algorithm>
#include <map>

#include "data/image_dataset.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "support/datasets.h"

using namespace dptrain::data;
using dptrain::testing::counting_dataset;
using dptrain::testing::epoch_batches;

namespace {

LoaderOptions host(int64_t batch_size, int64_t workers) {
  LoaderOptions o;
  o.batch_size = batch_size;
  o.num_workers = workers;
  return o;
}

LoaderOptions resident(int64_t batch_size) {
  LoaderOptions o;
  o.batch_size = batch_size;
  o.placement = Placement::kDevice;
  return o;
}

std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

std::vector<int64_t> sizes(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> s;
  for (const auto& b : batches) s.push_back(static_cast<int64_t>(b.size()));
  return s;
}

}  // namespace

TEST_CASE("a batch size that does not divide the data set leaves a short last batch", "[data]") {
  auto dataset = counting_dataset(250);
  for (const auto& options : {host(64, 0), host(64, 3), resident(64)}) {
    const auto loader =
        make_loader(dataset, std::make_shared<SequentialSampler>(250), options, torch::kCPU);
    CHECK(loader->batches_per_epoch() == 4);
    const auto batches = epoch_batches(*loader, 0);
    CHECK(sizes(batches) == std::vector<int64_t>{64, 64, 64, 58});
    CHECK(flatten(batches) == SequentialSampler(250).epoch_indices(0));
  }
}

TEST_CASE("drop_last and limit_batches cut the epoch short", "[data]") {
  auto dataset = counting_dataset(250);
  for (const auto& base : {host(64, 0), host(64, 2), resident(64)}) {
    LoaderOptions options = base;
    options.drop_last = true;
    const auto dropping =
        make_loader(dataset, std::make_shared<SequentialSampler>(250), options, torch::kCPU);
    CHECK(sizes(epoch_batches(*dropping, 0)) == std::vector<int64_t>{64, 64, 64});
    options.drop_last = false;
    options.limit_batches = 2;
    const auto limited =
        make_loader(dataset, std::make_shared<SequentialSampler>(250), options, torch::kCPU);
    CHECK(limited->batches_per_epoch() == 2);
    CHECK(flatten(epoch_batches(*limited, 0)).size() == 128);
  }
}

TEST_CASE("with 0-4 workers and 1-3 ranks every sample comes exactly once an epoch", "[data]") {
  // 246 divides among 1, 2 and 3 ranks, so the distributed sampler pads nothing; the batch sizes
  // divide none of the shares (246, 123, 82).
  const int64_t n = 246;
  auto dataset = counting_dataset(n);
  for (int64_t workers = 0; workers <= 4; ++workers) {
    for (int64_t world = 1; world <= 3; ++world) {
      for (const int64_t batch_size : {7, 10}) {
        INFO("workers " << workers << ", ranks " << world << ", batch " << batch_size);
        std::map<int64_t, int> seen;
        for (int64_t rank = 0; rank < world; ++rank) {
          DistributedSampler::Options o;
          o.world_size = world;
          o.rank = rank;
          o.seed = 17;
          auto sampler = std::make_shared<DistributedSampler>(n, o);
          const auto loader = make_loader(dataset, sampler, host(batch_size, workers), torch::kCPU);
          const auto batches = epoch_batches(*loader, 1);
          CHECK(static_cast<int64_t>(batches.size()) == loader->batches_per_epoch());
          CHECK(flatten(batches) == sampler->epoch_indices(1));
          for (const int64_t i : flatten(batches)) ++seen[i];
        }
        REQUIRE(static_cast<int64_t>(seen.size()) == n);
        for (const auto& [index, count] : seen) REQUIRE(count == 1);
      }
    }
  }
}

TEST_CASE("the same seed gives the same batches whatever the workers and placement", "[data]") {
  auto dataset = counting_dataset(250);
  auto sampler = std::make_shared<RandomSampler>(250, 11);
  const auto reference = make_loader(dataset, sampler, host(32, 0), torch::kCPU);
  const auto epoch0 = epoch_batches(*reference, 0);
  const auto epoch1 = epoch_batches(*reference, 1);
  CHECK(flatten(epoch0) == sampler->epoch_indices(0));
  CHECK(epoch0 != epoch1);  // a new order each epoch ...
  auto a = flatten(epoch0), b = flatten(epoch1);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  CHECK(a == b);  // ... of the same samples
  for (const auto& options : {host(32, 1), host(32, 2), host(32, 4), resident(32)}) {
    INFO("workers " << options.num_workers << ", placement " << placement_name(options.placement));
    const auto loader = make_loader(dataset, sampler, options, torch::kCPU);
    CHECK(epoch_batches(*loader, 0) == epoch0);
    CHECK(epoch_batches(*loader, 1) == epoch1);
  }
}

TEST_CASE("host and device placement give bit-identical batches", "[data]") {
  torch::manual_seed(5);
  auto dataset = std::make_shared<ImageDataset>(
      torch::randint(0, 256, {300, 28, 28}, torch::kInt64).to(torch::kUInt8),
      torch::randint(0, 10, {300}, torch::kInt64).to(torch::kUInt8), 10);
  auto sampler = std::make_shared<RandomSampler>(300, 2);
  const auto on_host = make_loader(dataset, sampler, host(64, 2), torch::kCPU);
  const auto on_device = make_loader(dataset, sampler, resident(64), torch::kCPU);
  on_host->start_epoch(3);
  on_device->start_epoch(3);
  int64_t batches = 0;
  while (auto a = on_host->next()) {
    auto b = on_device->next();
    REQUIRE(b);
    CHECK(b->images.sizes() == a->images.sizes());
    CHECK(b->images.scalar_type() == torch::kFloat32);
    CHECK(b->labels.scalar_type() == torch::kInt64);
    CHECK(torch::equal(a->images, b->images));
    CHECK(torch::equal(a->labels, b->labels));
    ++batches;
  }
  CHECK_FALSE(on_device->next());
  CHECK(batches == 5);
}

TEST_CASE("a batch's pixels are uint8 / 255 as float, as ToTensor makes them", "[data]") {
  auto images = torch::arange(256, torch::kInt64).to(torch::kUInt8).view({1, 16, 16});
  ImageDataset dataset(images, torch::zeros({1}, torch::kUInt8), 10);
  const Batch batch = dataset.get_batch({0});
  CHECK(batch.images.sizes() == torch::IntArrayRef({1, 1, 16, 16}));
  CHECK(batch.images.scalar_type() == torch::kFloat32);
  const auto expected = images.to(torch::kFloat32).div(255).view({1, 1, 16, 16});
  CHECK(torch::equal(batch.images, expected));
  CHECK(batch.labels.scalar_type() == torch::kInt64);
}

TEST_CASE("placement auto means device on a GPU and host on a CPU", "[data]") {
  CHECK(resolve_placement("auto", torch::kCPU) == Placement::kHost);
  CHECK(resolve_placement("auto", torch::Device(torch::kCUDA, 0)) == Placement::kDevice);
  CHECK(resolve_placement("device", torch::kCPU) == Placement::kDevice);
  CHECK(resolve_placement("host", torch::Device(torch::kCUDA, 0)) == Placement::kHost);
}
