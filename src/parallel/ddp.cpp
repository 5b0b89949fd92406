#include "parallel/ddp.h"

#include <spdlog/spdlog.h>

#include "parallel/buffers.h"
#include "parallel/zero_optimizer.h"

namespace dptrain::parallel {

DistributedDataParallel::DistributedDataParallel(torch::nn::AnyModule model, torch::Device device,
                                                 std::unique_ptr<distributed::Communicator> comm,
                                                 int64_t bucket_bytes, int zero_stage,
                                                 bool sync_batchnorm,
                                                 const ExchangeOptions& exchange)
    : model_(std::move(model)), device_(device), comm_(std::move(comm)) {
  model_.ptr()->to(device_);
  buffers_ = model_.ptr()->buffers();
  broadcast_initial_state();
  if (sync_batchnorm) {
    const int layers = sync_batchnorm_over(*model_.ptr(), *comm_);
    if (comm_->rank() == 0) {
      spdlog::info("ddp: SyncBatchNorm: {} BatchNorm layers normalise over the global batch",
                   layers);
    }
  }
  if (zero_stage > 0) {
    zero_ =
        std::make_unique<ZeroShard>(model_.ptr()->parameters(), *comm_, zero_stage, bucket_bytes);
  }
  reducer_ = std::make_unique<GradReducer>(model_.ptr()->parameters(), *comm_, bucket_bytes,
                                           choose_grad_route(zero_.get()), exchange.compression);
  // The config refuses local SGD under ZeRO (config/load.cpp): it keeps each rank's state whole.
  if (exchange.local_sgd > 0) {
    local_sgd_ = std::make_unique<LocalSgd>(exchange.local_sgd, exchange.local_sgd_warmup_steps,
                                            model_.ptr()->parameters(), *comm_);
  }
  for (const auto& name : comm_->all_gather_text("devices", device_.str())) {
    all_devices_.emplace_back(name);
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  stop_syncing_batchnorm(*model_.ptr());
}

void DistributedDataParallel::broadcast_initial_state() {
  // Parameters and buffers alike in one collective, not one per tensor.
  std::vector<torch::Tensor> state;
  std::vector<std::string> names;
  for (const auto& p : model_.ptr()->named_parameters()) {
    names.push_back(p.key());
    state.push_back(p.value());
  }
  for (const auto& b : model_.ptr()->named_buffers()) {
    names.push_back(b.key());
    state.push_back(b.value());
  }
  check_same_shapes(names, state, *comm_);
  broadcast_from_rank0(state, *comm_, "the broadcast of rank 0's initial parameters");
}

std::unique_ptr<torch::optim::Optimizer> DistributedDataParallel::make_optimizer(
    const OptimizerFactory& make) {
  if (!zero_) return make(parameters());
  return std::make_unique<ZeroOptimizer>(make, *zero_);
}

std::vector<torch::Tensor> DistributedDataParallel::optimizer_parameters() {
  if (!zero_) return parameters();
  return {zero_->master()};
}

// Under ZeRO the trainer's optimizer is the ZeroOptimizer that make_optimizer() made.
optim::StateList DistributedDataParallel::optimizer_state(torch::optim::Optimizer& optimizer) {
  if (!zero_) return Backend::optimizer_state(optimizer);
  return dynamic_cast<ZeroOptimizer&>(optimizer).gather_state();
}

void DistributedDataParallel::load_optimizer_state(torch::optim::Optimizer& optimizer,
                                                   const optim::StateList& whole) {
  if (!zero_) return Backend::load_optimizer_state(optimizer, whole);
  dynamic_cast<ZeroOptimizer&>(optimizer).load_state(whole);
}

int64_t DistributedDataParallel::optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  return parallel::optimizer_state_bytes(optimizer);
}

void DistributedDataParallel::finish_backward() {
  // A backward outside prepare_for_backward() (no_sync, evaluation) finishes nothing: its
  // gradients stay in .grad, unreduced.
  reducer_->finish();
}

int64_t DistributedDataParallel::gradient_bytes() {
  // Where .grad is a view of the flat gradients, their bytes are all there is.
  int64_t bytes = reducer_->gradient_bytes();
  if (!reducer_->gradients_are_views()) bytes += Backend::gradient_bytes();
  if (zero_) {
    const torch::Tensor& shard = zero_->master().grad();
    bytes += shard.numel() * static_cast<int64_t>(shard.element_size());
  }
  // PowerSGD's error feedback (a whole gradient's worth) and factors live as long as the buckets.
  if (const torch::Tensor state = reducer_->compression_state(); state.defined()) {
    bytes += static_cast<int64_t>(state.nbytes());
  }
  return bytes;
}

void DistributedDataParallel::broadcast_buffers() {
  broadcast_from_rank0(buffers_, *comm_, "the broadcast of rank 0's buffers");
  buffers_stale_ = false;
}

void DistributedDataParallel::set_training(bool training) {
  // Here rather than at the first evaluation forward: every rank switches, while a rank's shard of
  // the test set may hold fewer batches than another's, or none.
  if (!training && local_sgd_) local_sgd_->average_if_diverged();
  if (!training && buffers_stale_) broadcast_buffers();
  training_ = training;
  model_.ptr()->train(training);
}

torch::Tensor DistributedDataParallel::forward(const torch::Tensor& input) {
  // A local SGD step: no all-reduce, and rank 0's buffers wait for the next averaging.
  const bool local = training_ && local_sgd_ && local_sgd_->local_step(steps_taken_);
  if (local) {
    buffers_stale_ = !buffers_.empty() && comm_->world_size() > 1;
    return model_.forward(input);
  }
  if (training_ && torch::GradMode::is_enabled()) {
    if (sync_) {
      reducer_->prepare_for_backward(/*include_accumulated=*/unsynced_gradients_);
      unsynced_gradients_ = false;
    } else {
      unsynced_gradients_ = true;  // the hooks stay disarmed: autograd adds into .grad alone
    }
  }
  if (training_) {
    if (buffers_stale_) broadcast_buffers();
    // As DistributedDataParallel: after a synced training forward, the next training forward
    // (the next step's first micro-batch) starts from rank 0's buffers; set_training(false)
    // broadcasts them before an evaluation.
    buffers_stale_ =
        !buffers_.empty() && comm_->world_size() > 1 && torch::GradMode::is_enabled() && sync_;
  }
  return model_.forward(input);
}

void DistributedDataParallel::all_reduce_sum(std::vector<double>& values) {
  if (values.empty()) return;
  // On the device: NCCL reduces only device tensors, and Gloo takes either.
  torch::Tensor t =
      torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat64)).to(device_);
  comm_->all_reduce(t, "the all-reduce of the epoch's sums");
  t = t.cpu();
  for (size_t i = 0; i < values.size(); ++i) values[i] = t[static_cast<int64_t>(i)].item<double>();
}

void DistributedDataParallel::start_at_step(int64_t steps_taken) {
  steps_taken_ = steps_taken;
  reducer_->set_reduced_steps(steps_taken);
  if (local_sgd_) local_sgd_->start_at(steps_taken);
}

void DistributedDataParallel::after_optimizer_step(int64_t steps_taken) {
  steps_taken_ = steps_taken;
  if (!local_sgd_) return;
  local_sgd_->after_step(steps_taken);
  // Averaged parameters start from rank 0's buffers, as a ddp step would.
  if (buffers_stale_ && !local_sgd_->diverged()) broadcast_buffers();
}

torch::Tensor DistributedDataParallel::gather_rank_states(torch::optim::Optimizer& optimizer) {
  const torch::Tensor mine =
      local_sgd_ ? local_sgd_->state(optimizer) : reducer_->compression_state();
  if (!mine.defined()) return {};
  const torch::Tensor row = mine.to(device_).contiguous();
  torch::Tensor all;
  if (comm_->rank() == 0) all = torch::empty({comm_->world_size() * row.numel()}, row.options());
  comm_->gather_to_rank0(all, row, "the gathering of every rank's state for a checkpoint");
  if (comm_->rank() != 0) return {};
  return all.view({comm_->world_size(), row.numel()}).cpu();
}

int64_t DistributedDataParallel::rank_state_numel(const optim::StateList& optimizer) {
  if (local_sgd_) return local_sgd_->state_numel(optimizer);
  const torch::Tensor state = reducer_->compression_state();
  return state.defined() ? state.numel() : 0;
}

void DistributedDataParallel::load_rank_state(torch::optim::Optimizer& optimizer,
                                              const torch::Tensor& row) {
  torch::NoGradGuard no_grad;
  if (local_sgd_) {
    local_sgd_->load_state(optimizer, row.to(device_));
  } else if (torch::Tensor state = reducer_->compression_state(); state.defined()) {
    state.copy_(row);
  }
}

}  // namespace dptrain::parallel
