// The checkpoint reader on arbitrary bytes, into a LeNet on the CPU as `--resume FILE` would.
#include <torch/torch.h>

#include "config/load.h"
#include "core/error.h"
#include "fuzz_input.h"
#include "launch/environment.h"
#include "model/registry.h"
#include "parallel/backend.h"
#include "train/checkpoint_io.h"

namespace {

struct Target {
  dptrain::config::Config config = dptrain::config::resolve_config(
      std::nullopt, "defaults", {"parallel.devices=cpu"}, {"lenet"});
  std::unique_ptr<dptrain::parallel::Backend> backend = dptrain::parallel::make_backend(
      config.parallel, dptrain::model::make_model(config.model), dptrain::launch::RankInfo{});
  torch::optim::SGD optimizer{backend->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Target target;
  try {
    dptrain::train::load_checkpoint(dptrain::fuzz::input_file(data, size), target.config,
                                    *target.backend, target.optimizer);
  } catch (const dptrain::core::Error&) {
  }
  return 0;
}
