#include "parallel/factory.h"

#include "core/error.h"
#include "parallel/devices.h"
#include "parallel/single.h"

namespace dptrain::parallel {

std::unique_ptr<Backend> make_backend(const config::ParallelConfig& config,
                                      torch::nn::AnyModule model) {
  if (config.backend == "single") {
    const torch::Device device = resolve_device(config.devices.at(0), "parallel.devices[0]");
    return std::make_unique<SingleDevice>(std::move(model), device);
  }
  throw core::Error(core::ErrorCode::kNotSupported,
                    "parallel.backend: \"" + config.backend + "\" is not supported yet",
                    "use \"single\"");
}

}  // namespace dptrain::parallel
