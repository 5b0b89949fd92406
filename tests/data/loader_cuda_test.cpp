// The loaders on a GPU: pinned staging with copies on a side stream, and device-resident data,
// must deliver exactly the CPU's batches. Without a GPU these are skipped.
#include "support/catch.h"
#include "support/skip.h"

#include <iostream>

#include "data/image_dataset.h"
#include "data/loader.h"

using namespace dptrain::data;

namespace {

std::vector<Batch> epoch(Loader& loader, int64_t e) {
  std::vector<Batch> batches;
  loader.start_epoch(e);
  while (auto b = loader.next()) batches.push_back({b->images.cpu(), b->labels.cpu()});
  return batches;
}

}  // namespace

TEST_CASE("pinned and device-resident loading on cuda:0 give the CPU's batches", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(8);
  auto dataset = std::make_shared<ImageDataset>(
      torch::randint(0, 256, {1000, 28, 28}, torch::kInt64).to(torch::kUInt8),
      torch::randint(0, 10, {1000}, torch::kInt64).to(torch::kUInt8), 10);
  auto sampler = std::make_shared<RandomSampler>(1000, 4);
  LoaderOptions cpu_options;
  cpu_options.batch_size = 96;  // a short last batch of 40
  const auto cpu = make_loader(dataset, sampler, cpu_options, torch::kCPU);
  const torch::Device gpu(torch::kCUDA, 0);
  for (const int64_t workers : {0, 3}) {
    for (const Placement placement : {Placement::kHost, Placement::kDevice}) {
      INFO("workers " << workers << ", placement " << placement_name(placement));
      LoaderOptions options = cpu_options;
      options.num_workers = workers;
      options.pin_memory = true;
      options.placement = placement;
      const auto loader = make_loader(dataset, sampler, options, gpu);
      // An epoch abandoned after two batches, with a copy in flight, then two whole ones.
      loader->start_epoch(0);
      REQUIRE(loader->next()->images.device() == gpu);
      REQUIRE(loader->next());
      for (const int64_t e : {1, 2}) {
        const auto expected = epoch(*cpu, e);
        const auto got = epoch(*loader, e);
        REQUIRE(got.size() == expected.size());
        for (size_t k = 0; k < got.size(); ++k) {
          CHECK(torch::equal(got[k].images, expected[k].images));
          CHECK(torch::equal(got[k].labels, expected[k].labels));
        }
      }
    }
  }
}
