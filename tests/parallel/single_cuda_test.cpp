// The single backend and the loader on a GPU. Without one these tests are skipped
// (support/skip.h).
#include "support/catch.h"
#include "support/skip.h"

#include <iostream>

#include "data/image_dataset.h"
#include "data/loader.h"
#include "model/registry.h"
#include "parallel/single.h"

using namespace dptrain;

namespace {

std::shared_ptr<data::ImageDataset> random_images(int64_t n) {
  torch::manual_seed(3);
  return std::make_shared<data::ImageDataset>(
      torch::randint(0, 256, {n, 28, 28}, torch::kInt64).to(torch::kUInt8),
      torch::randint(0, 10, {n}, torch::kInt64).to(torch::kUInt8), 10);
}

std::vector<torch::Tensor> train_steps(torch::Device device, data::LoaderOptions options,
                                       int steps) {
  const auto dataset = random_images(64 * steps);
  options.batch_size = 64;
  const auto loader = data::make_loader(
      dataset, std::make_shared<data::RandomSampler>(dataset->size(), 1), options, device);
  torch::manual_seed(0);
  parallel::SingleDevice backend(model::make_model(config::ModelConfig{}), device);
  torch::optim::SGD sgd(backend.parameters(), torch::optim::SGDOptions(0.2));
  loader->start_epoch(0);
  while (auto batch = loader->next()) {
    REQUIRE(batch->images.device() == device);
    sgd.zero_grad();
    torch::nn::functional::cross_entropy(backend.forward(batch->images), batch->labels).backward();
    backend.finish_backward();
    sgd.step();
  }
  std::vector<torch::Tensor> params;
  for (const auto& p : backend.parameters()) params.push_back(p.detach().cpu());
  return params;
}

}  // namespace

TEST_CASE("training on cuda:0 gives the CPU's parameters, whatever the data placement", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const auto cpu = train_steps(torch::kCPU, data::LoaderOptions{}, 5);
  data::LoaderOptions pageable, pinned, resident;
  pinned.pin_memory = true;
  pinned.num_workers = 2;
  resident.placement = data::Placement::kDevice;
  for (const auto& [name, options] :
       {std::pair{"host, pageable", pageable}, std::pair{"host, pinned, 2 workers", pinned},
        std::pair{"device", resident}}) {
    INFO(name);
    const auto gpu = train_steps(torch::Device(torch::kCUDA, 0), options, 5);
    REQUIRE(gpu.size() == cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      CHECK(torch::allclose(gpu[i], cpu[i], /*rtol=*/1e-4, /*atol=*/1e-6));
    }
  }
}
