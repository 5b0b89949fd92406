#include "data/loader.h"

#include <algorithm>

#include "data/host_loader.h"
#include "data/resident_loader.h"

namespace dptrain::data {

int64_t batches_per_epoch(int64_t samples, const LoaderOptions& options) {
  const int64_t b = options.batch_size;
  const int64_t full = options.drop_last ? samples / b : (samples + b - 1) / b;
  return options.limit_batches > 0 ? std::min(full, options.limit_batches) : full;
}

Placement resolve_placement(const std::string& name, torch::Device device) {
  if (name == "host") return Placement::kHost;
  if (name == "device") return Placement::kDevice;
  TORCH_CHECK(name == "auto", "unknown data placement ", name);
  return device.is_cuda() ? Placement::kDevice : Placement::kHost;
}

const char* placement_name(Placement placement) {
  return placement == Placement::kDevice ? "device" : "host";
}

std::unique_ptr<Loader> make_loader(std::shared_ptr<const Dataset> dataset,
                                    std::shared_ptr<const Sampler> sampler, LoaderOptions options,
                                    torch::Device device) {
  TORCH_CHECK(options.batch_size > 0, "loader: batch_size must be positive");
  if (options.placement == Placement::kDevice) {
    return std::make_unique<ResidentLoader>(std::move(dataset), std::move(sampler), options,
                                            device);
  }
  return std::make_unique<HostLoader>(std::move(dataset), std::move(sampler), options, device);
}

}  // namespace dptrain::data
