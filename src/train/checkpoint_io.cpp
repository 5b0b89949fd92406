#include "train/checkpoint_io.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

#include "core/error.h"
#include "train/parameters.h"

namespace dptrain::train {

run::CheckpointContents gather_checkpoint(const run::ResumePoint& point, parallel::Backend& backend,
                                          torch::optim::Optimizer& optimizer) {
  run::CheckpointContents contents;
  contents.optimizer = backend.optimizer_state(optimizer);  // first: a collective under ZeRO
  contents.point = point;
  contents.parameters = backend.parameters();
  contents.buffers = backend.buffers();
  contents.cpu_rng = at::detail::getDefaultCPUGenerator().get_state();
  contents.rank_states = backend.gather_rank_states(optimizer);  // a collective where defined
  return contents;
}

run::ResumePoint apply_checkpoint(run::CheckpointContents contents,
                                  const std::filesystem::path& path, parallel::Backend& backend,
                                  torch::optim::Optimizer& optimizer) {
  try {  // ZeRO refuses a state it cannot shard before it changes anything
    backend.load_optimizer_state(optimizer, contents.optimizer);
  } catch (const core::Error& e) {
    throw core::Error(e.code(), path.string() + ": a damaged checkpoint: " + e.what(), e.hint());
  }
  {
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle on the global one
    const std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(contents.cpu_rng);
  }
  std::vector<torch::Tensor> state = std::move(contents.parameters);
  state.insert(state.end(), contents.buffers.begin(), contents.buffers.end());
  copy_into_model(backend, state);
  // Over rank 0's parameters and optimizer state, laid out as every rank's.
  if (contents.own_rank_state.defined()) {
    backend.load_rank_state(optimizer, contents.own_rank_state);
  }
  return std::move(contents.point);
}

run::RankStateSpec rank_state_spec(parallel::Backend& backend) {
  run::RankStateSpec spec;
  spec.world = backend.world_size();
  spec.rank = backend.rank();
  spec.numel = [&backend](const optim::StateList& optimizer) {
    return backend.rank_state_numel(optimizer);
  };
  return spec;
}

void save_checkpoint(const std::filesystem::path& path, const config::Config& config,
                     const run::ResumePoint& point, parallel::Backend& backend,
                     torch::optim::Optimizer& optimizer) {
  const run::CheckpointContents contents = gather_checkpoint(point, backend, optimizer);
  if (backend.rank() == 0) run::write_checkpoint_file(path, config, contents);
}

run::ResumePoint load_checkpoint(const std::filesystem::path& path, const config::Config& config,
                                 parallel::Backend& backend, torch::optim::Optimizer& optimizer) {
  return load_checkpoint(path, std::make_shared<const core::ReadOnlyFile>(path), config, backend,
                         optimizer);
}

run::ResumePoint load_checkpoint(const std::filesystem::path& path,
                                 const std::shared_ptr<const core::ReadOnlyFile>& file,
                                 const config::Config& config, parallel::Backend& backend,
                                 torch::optim::Optimizer& optimizer) {
  run::CheckpointContents contents = run::read_checkpoint_file(
      path, file, config, backend.parameters(), backend.buffers(), rank_state_spec(backend));
  return apply_checkpoint(std::move(contents), path, backend, optimizer);
}

}  // namespace dptrain::train
