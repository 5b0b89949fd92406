#include "parallel/data_parallel.h"

#include <c10/core/StreamGuard.h>

#include "core/error.h"
#include "core/streams.h"

namespace dptrain::parallel {
namespace {

// Replica `params` moved into one flat buffer, in the model's order: a whole model then moves
// between devices in one copy, and its gradients add up in one kernel.
FlatBuffer flat_parameters(const std::vector<torch::Tensor>& params) {
  return FlatBuffer::adopt(
      params,
      FlatLayout(numels_of(params), model_order(params.size()), 1, 0, params.at(0).element_size()),
      "dp");
}

// Where each chunk of chunk_sizes() starts.
std::vector<int64_t> offsets_of(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> offsets(sizes.size(), 0);
  for (size_t i = 1; i < sizes.size(); ++i) offsets[i] = offsets[i - 1] + sizes[i - 1];
  return offsets;
}

}  // namespace

std::vector<int64_t> chunk_sizes(int64_t batch, size_t replicas) {
  TORCH_CHECK(batch > 0 && replicas > 0, "chunk_sizes: empty batch or no replicas");
  const auto n = static_cast<int64_t>(replicas);
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < std::min(batch, n); ++i) {
    sizes.push_back(batch / n + (i < batch % n ? 1 : 0));
  }
  return sizes;
}

DataParallel::DataParallel(torch::nn::AnyModule model, std::vector<torch::Device> devices,
                           torch::Device output_device)
    : devices_(std::move(devices)), output_device_(output_device) {
  TORCH_CHECK(!devices_.empty(), "dp: no devices");
  model.ptr()->to(devices_[0]);
  for (size_t i = 0; i < devices_.size(); ++i) replicas_.push_back(make_replica(i, model));
  threads_ = std::make_unique<ReplicaThreads>(devices_.size());
}

DataParallel::Replica DataParallel::make_replica(size_t index,
                                                 const torch::nn::AnyModule& master) const {
  Replica r;
  r.index = index;
  r.device = devices_[index];
  // Replica 0 is the master itself, as in DataParallel: the optimizer steps its parameters.
  r.module = index == 0 ? master : master.clone(r.device);
  r.params = r.module.ptr()->parameters();
  r.buffers = r.module.ptr()->buffers();
  TORCH_CHECK(!r.params.empty(), "dp: the model has no parameters");
  r.flat_params = flat_parameters(r.params);
  if (index > 0) {
    r.flat_grads = FlatBuffer(r.flat_params.layout(), r.flat_params.flat().options());
    // Autograd accumulates into a gradient that is already there, so backward writes this
    // replica's gradients straight into its flat buffer.
    const auto grads = r.flat_grads.views(r.params);
    for (size_t k = 0; k < r.params.size(); ++k) r.params[k].mutable_grad() = grads[k];
  }
  if (r.device.is_cuda()) r.stream = core::pool_stream(r.device);
  return r;
}

void DataParallel::set_training(bool training) {
  training_ = training;
  for (auto& r : replicas_) r.module.ptr()->train(training);
}

void DataParallel::run_replicas(size_t n, const char* phase,
                                const std::function<void(Replica&)>& work) {
  // The caller's streams, read on its thread (a thread's current stream is its own): what it
  // queued there (the batch, the optimizer step, the last gather) comes before a replica's work.
  const std::vector<c10::Stream> caller_streams = {core::current_stream(output_device_),
                                                   core::current_stream(devices_[0])};
  std::vector<c10::Stream> own_device_streams;
  for (size_t i = 0; i < n; ++i) own_device_streams.push_back(core::current_stream(devices_[i]));
  threads_->run(n, [&](size_t i) {
    Replica& r = replicas_[i];
    try {
      std::optional<c10::StreamGuard> on_own_stream;
      if (r.stream) {
        for (const auto& s : caller_streams) core::wait_for(*r.stream, s);
        core::wait_for(*r.stream, own_device_streams[i]);
        on_own_stream.emplace(*r.stream);
      }
      work(r);
    } catch (const core::Error&) {
      throw;
    } catch (const std::exception& e) {
      throw core::Error(core::ErrorCode::kRuntime,
                        "dp: replica " + std::to_string(i) + " of " +
                            std::to_string(replicas_.size()) + " (on " + r.device.str() +
                            ") failed in " + phase + ": " + core::message_of(e),
                        "the step stopped on every replica; the message above is the replica's "
                        "own error");
    }
  });
  join_replica_streams(n);
}

void DataParallel::join_replica_streams(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const Replica& r = replicas_[i];
    if (!r.stream) continue;
    core::wait_for(core::current_stream(output_device_), *r.stream);
    core::wait_for(core::current_stream(devices_[0]), *r.stream);
    core::wait_for(core::current_stream(r.device), *r.stream);
  }
}

void DataParallel::copy_master_into(Replica& r, bool for_backward) {
  if (r.index == 0) return;
  torch::NoGradGuard no_grad;
  const Replica& master = replicas_[0];
  r.flat_params.flat().copy_(master.flat_params.flat(), /*non_blocking=*/true);
  if (for_backward) r.flat_grads.flat().zero_();
}

void DataParallel::copy_master_buffers(size_t n) {
  // Here, before the replicas start: replica 0's own forward updates the master's running
  // statistics in place while the others run, so they cannot read them from their threads.
  torch::NoGradGuard no_grad;
  const Replica& master = replicas_[0];
  for (size_t i = 1; i < n; ++i) {
    Replica& r = replicas_[i];
    for (size_t k = 0; k < r.buffers.size(); ++k) {
      r.buffers[k].copy_(master.buffers[k], /*non_blocking=*/true);
    }
  }
}

torch::Tensor DataParallel::forward(const torch::Tensor& input) {
  const bool for_backward = training_ && torch::GradMode::is_enabled();
  pending_.reset();
  const std::vector<int64_t> sizes = chunk_sizes(input.size(0), replicas_.size());
  const std::vector<int64_t> offsets = offsets_of(sizes);

  copy_master_buffers(sizes.size());
  std::vector<torch::Tensor> outputs(sizes.size());
  run_replicas(sizes.size(), "forward", [&](Replica& r) {
    copy_master_into(r, for_backward);
    const torch::Tensor chunk =
        input.narrow(0, offsets[r.index], sizes[r.index]).to(r.device, /*non_blocking=*/true);
    outputs[r.index] = r.module.forward(chunk);
  });

  // To a GPU the copies may be queued; to the host they must be complete before anyone reads.
  const bool non_blocking = output_device_.is_cuda();
  std::vector<torch::Tensor> parts;
  for (const auto& out : outputs) {
    parts.push_back((for_backward ? out.detach() : out).to(output_device_, non_blocking));
  }
  torch::Tensor gathered = parts.size() == 1 ? parts[0] : torch::cat(parts);
  if (for_backward) {
    gathered.requires_grad_(true);
    pending_ = PendingBackward{std::move(outputs), gathered, sizes};
  }
  return gathered;
}

void DataParallel::finish_backward() {
  if (!pending_) return;  // no training forward since the last step
  const PendingBackward pending = std::move(*pending_);
  pending_.reset();
  const torch::Tensor grad = pending.gathered.grad();
  if (!grad.defined()) {
    throw core::Error(core::ErrorCode::kRuntime,
                      "dp: backward did not reach the gathered outputs of forward()",
                      "take the loss from forward()'s result and call backward on it");
  }
  const std::vector<int64_t> offsets = offsets_of(pending.sizes);
  run_replicas(pending.sizes.size(), "backward", [&](Replica& r) {
    const torch::Tensor chunk_grad = grad.narrow(0, offsets[r.index], pending.sizes[r.index])
                                         .to(r.device, /*non_blocking=*/true);
    torch::autograd::backward({pending.outputs[r.index]}, {chunk_grad});
  });
  add_replica_gradients(pending.sizes.size());
}

void DataParallel::add_replica_gradients(size_t n) {
  torch::NoGradGuard no_grad;
  Replica& master = replicas_[0];
  for (auto& p : master.params) {
    // Undefined where the optimizer resets gradients to none, or replica 0 did not use it.
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  }
  if (n < 2) return;
  // One flat copy per replica to the master's device, then one add into every gradient at once.
  // The first sum makes a new tensor: replica 1's part may be its own buffer, not a copy.
  torch::Tensor total = replicas_[1].flat_grads.flat().to(master.device, /*non_blocking=*/true);
  for (size_t i = 2; i < n; ++i) {
    const torch::Tensor part =
        replicas_[i].flat_grads.flat().to(master.device, /*non_blocking=*/true);
    total = i == 2 ? total + part : total.add_(part);
  }
  std::vector<torch::Tensor> grads;
  for (const auto& p : master.params) grads.push_back(p.grad());
  torch::_foreach_add_(grads, master.flat_params.layout().unflatten(total, master.params));
}

}  // namespace dptrain::parallel
