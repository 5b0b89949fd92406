// Loaders cut a sampler's order into batches and deliver them on the training device. Two
// placements: "host" assembles batches on the CPU (worker threads, a bounded prefetch queue,
// pinned staging buffers and asynchronous copies for CUDA); "device" keeps the whole split on the
// training device and gathers each batch there by index, with no host work per step.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "data/dataset.h"
#include "data/sampler.h"

namespace dptrain::data {

enum class Placement { kHost, kDevice };

struct LoaderOptions {
  int64_t batch_size = 256;
  bool drop_last = false;
  int64_t limit_batches = 0;  // 0: every batch
  Placement placement = Placement::kHost;
  int64_t num_workers = 0;       // host: assembling threads; 0: the training thread
  int64_t prefetch_batches = 0;  // host: bound on batches ready ahead; 0: 2 per worker
  bool pin_memory = false;       // host to CUDA: pinned staging buffers, copies on a side stream
};

class Loader {
 public:
  virtual ~Loader() = default;
  virtual int64_t batches_per_epoch() const = 0;
  // Starts epoch `epoch` (stopping what is left of the previous one) at batch `first_batch`:
  // the batches before it, trained on before a resume, are never assembled.
  virtual void start_epoch_at(int64_t epoch, int64_t first_batch) = 0;
  void start_epoch(int64_t epoch) { start_epoch_at(epoch, 0); }
  // The next batch of the epoch, on the device; nullopt at the end of the epoch.
  virtual std::optional<Batch> next() = 0;
};

// Batches an epoch of `samples` takes under these options.
int64_t batches_per_epoch(int64_t samples, const LoaderOptions& options);

// "auto" picks the device placement on GPUs and the host placement on CPUs (see
// docs/experiments.md, Data loading).
Placement resolve_placement(const std::string& name, torch::Device device);
const char* placement_name(Placement placement);

std::unique_ptr<Loader> make_loader(std::shared_ptr<const Dataset> dataset,
                                    std::shared_ptr<const Sampler> sampler, LoaderOptions options,
                                    torch::Device device);

}  // namespace dptrain::data
