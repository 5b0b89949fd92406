#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "data/image_dataset.h"
#include "data/loader.h"
#include "data/sampler.h"

using namespace dptrain::data;

namespace {

// n images of 2x2 pixels whose four pixels all hold the image's index; labels index % 10.
std::shared_ptr<ImageDataset> counting_dataset(int64_t n) {
  auto images = torch::arange(n, torch::kInt64).remainder(256).to(torch::kUInt8);
  images = images.view({n, 1, 1}).expand({n, 2, 2}).contiguous();
  auto labels = torch::arange(n, torch::kInt64).remainder(10).to(torch::kUInt8);
  return std::make_shared<ImageDataset>(images, labels, 10);
}

std::vector<int64_t> labels_seen(BatchLoader& loader, int64_t epoch, std::vector<int64_t>* sizes) {
  std::vector<int64_t> seen;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) {
    if (sizes) sizes->push_back(batch->size());
    // pixel value = index (below 256), so the images tell which samples came
    auto pixel =
        batch->images.select(2, 0).select(2, 0).squeeze(1).mul(255).round().to(torch::kInt64);
    for (int64_t i = 0; i < batch->size(); ++i) seen.push_back(pixel[i].item<int64_t>());
  }
  return seen;
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

TEST_CASE("a batch size that does not divide the data set leaves a short last batch", "[data]") {
  auto dataset = counting_dataset(250);
  LoaderOptions options;
  options.batch_size = 64;
  BatchLoader loader(dataset, std::make_shared<SequentialSampler>(250), options, torch::kCPU);
  CHECK(loader.batches_per_epoch() == 4);
  std::vector<int64_t> sizes;
  const auto seen = labels_seen(loader, 0, &sizes);
  CHECK(sizes == std::vector<int64_t>{64, 64, 64, 58});
  CHECK(seen == SequentialSampler(250).epoch_indices(0));
}

TEST_CASE("drop_last and limit_batches cut the epoch short", "[data]") {
  auto dataset = counting_dataset(250);
  LoaderOptions options;
  options.batch_size = 64;
  options.drop_last = true;
  BatchLoader dropping(dataset, std::make_shared<SequentialSampler>(250), options, torch::kCPU);
  std::vector<int64_t> sizes;
  labels_seen(dropping, 0, &sizes);
  CHECK(sizes == std::vector<int64_t>{64, 64, 64});
  options.drop_last = false;
  options.limit_batches = 2;
  BatchLoader limited(dataset, std::make_shared<SequentialSampler>(250), options, torch::kCPU);
  CHECK(limited.batches_per_epoch() == 2);
  CHECK(labels_seen(limited, 0, nullptr).size() == 128);
}

TEST_CASE("the loader follows the sampler's shuffled order, batch by batch", "[data]") {
  auto dataset = counting_dataset(200);
  auto sampler = std::make_shared<RandomSampler>(200, 11);
  LoaderOptions options;
  options.batch_size = 32;
  BatchLoader loader(dataset, sampler, options, torch::kCPU);
  CHECK(labels_seen(loader, 2, nullptr) == sampler->epoch_indices(2));
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
