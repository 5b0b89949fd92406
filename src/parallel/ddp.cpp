#include "parallel/ddp.h"

#include <spdlog/spdlog.h>

#include "parallel/buffers.h"
#include "parallel/zero_optimizer.h"

namespace dptrain::parallel {

DistributedDataParallel::DistributedDataParallel(torch::nn::AnyModule model, torch::Device device,
                                                 std::unique_ptr<distributed::Communicator> comm,
                                                 int64_t bucket_bytes, int zero_stage,
                                                 bool sync_batchnorm)
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
                                           choose_grad_route(zero_.get()));
  for (const auto& name : comm_->all_gather_text("devices", device_.str())) {
    all_devices_.emplace_back(name);
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  stop_syncing_batchnorm(*model_.ptr());
}

void DistributedDataParallel::broadcast_initial_state() {
  // Parameters and buffers alike in one collective, not one per tensor.
  std::vector<torch::Tensor> state = model_.ptr()->parameters();
  for (const auto& b : buffers_) state.push_back(b);
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
  return bytes;
}

void DistributedDataParallel::broadcast_buffers() {
  broadcast_from_rank0(buffers_, *comm_, "the broadcast of rank 0's buffers");
  buffers_stale_ = false;
}

void DistributedDataParallel::set_training(bool training) {
  // Here rather than at the first evaluation forward: every rank switches, while a rank's shard of
  // the test set may hold fewer batches than another's, or none.
  if (!training && buffers_stale_) broadcast_buffers();
  training_ = training;
  model_.ptr()->train(training);
}

torch::Tensor DistributedDataParallel::forward(const torch::Tensor& input) {
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

}  // namespace dptrain::parallel
