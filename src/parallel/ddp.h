// The ddp backend: this process is one rank of a job, one model copy on one device. Rank 0's
// initial parameters are broadcast to every rank; each step's gradients are averaged over the ranks
// through a GradReducer (flat buckets, all-reduced from autograd hooks as backward goes), so W
// ranks on B/W samples each take the optimizer step that one device takes on all B.
// Buffers follow DistributedDataParallel(broadcast_buffers=True): see buffers.h.
// With parallel.zero_stage 1 or 2 a ZeroShard splits the optimizer's state (and at stage 2 the
// gradients) over the ranks; the trainer sees the same interface.
// For slow links, parallel.grad_compression compresses each bucket (grad_compression.h), and
// parallel.local_sgd lets each rank step alone between averagings of the parameters (local_sgd.h).
#pragma once

#include <memory>

#include "distributed/communicator.h"
#include "parallel/backend.h"
#include "parallel/grad_reducer.h"
#include "parallel/local_sgd.h"
#include "parallel/zero_shard.h"

namespace dptrain::parallel {

// How the ranks exchange what they learn, where the link is slow (parallel.grad_compression,
// parallel.local_sgd*): all-reduced whole gradients by default.
struct ExchangeOptions {
  CompressionSpec compression;
  int64_t local_sgd = 0;  // the averaging period; 0: none
  int64_t local_sgd_warmup_steps = 0;
};

class DistributedDataParallel : public Backend {
 public:
  ~DistributedDataParallel() override;
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;
  DistributedDataParallel(torch::nn::AnyModule model, torch::Device device,
                          std::unique_ptr<distributed::Communicator> comm, int64_t bucket_bytes,
                          int zero_stage = 0, bool sync_batchnorm = false,
                          const ExchangeOptions& exchange = {});

  std::string name() const override { return "ddp"; }
  std::vector<torch::Device> devices() const override { return all_devices_; }
  torch::Device input_device() const override { return device_; }
  int rank() const override { return comm_->rank(); }
  int world_size() const override { return comm_->world_size(); }

  std::vector<torch::Tensor> parameters() override { return model_.ptr()->parameters(); }
  std::vector<torch::Tensor> buffers() override { return buffers_; }
  std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerFactory& make) override;
  std::vector<torch::Tensor> optimizer_parameters() override;
  bool shards_optimizer() const override { return zero_ != nullptr; }
  double sum_over_shards(double local) override { return zero_ ? zero_->sum(local) : local; }
  optim::StateList optimizer_state(torch::optim::Optimizer& optimizer) override;
  void load_optimizer_state(torch::optim::Optimizer& optimizer,
                            const optim::StateList& whole) override;
  int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) override;
  void set_training(bool training) override;
  void set_gradient_sync(bool sync) override { sync_ = sync; }
  torch::Tensor forward(const torch::Tensor& input) override;
  void finish_backward() override;
  void all_reduce_sum(std::vector<double>& values) override;
  std::vector<std::string> all_gather_text(const std::string& key,
                                           const std::string& mine) override {
    return comm_->all_gather_text(key, mine);
  }
  // The gradients' all-reduces that backward did not hide, and local SGD's averagings.
  double communication_wait_seconds() const override {
    return reducer_->wait_seconds() + (local_sgd_ ? local_sgd_->wait_seconds() : 0.0);
  }
  int64_t communication_bytes() const override { return comm_->payload_bytes(); }
  void start_at_step(int64_t steps_taken) override;
  void after_optimizer_step(int64_t steps_taken) override;
  torch::Tensor gather_rank_states(torch::optim::Optimizer& optimizer) override;
  int64_t rank_state_numel(const optim::StateList& optimizer) override;
  void load_rank_state(torch::optim::Optimizer& optimizer, const torch::Tensor& row) override;
  int64_t gradient_bytes() override;

 private:
  void broadcast_initial_state();
  void broadcast_buffers();

  torch::nn::AnyModule model_;
  torch::Device device_;
  std::unique_ptr<distributed::Communicator> comm_;
  std::unique_ptr<ZeroShard> zero_;  // zero_stage 1 and 2 only
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<LocalSgd> local_sgd_;  // parallel.local_sgd > 0 only
  std::vector<torch::Tensor> buffers_;
  std::vector<torch::Device> all_devices_;
  // Whether the buffers may differ between the ranks since the last broadcast.
  bool buffers_stale_ = false;
  bool training_ = true;
  bool sync_ = true;
  // Whether .grad holds micro-batches' gradients that no all-reduce has taken in yet.
  bool unsynced_gradients_ = false;
  int64_t steps_taken_ = 0;  // optimizer steps, as the trainer counts them
};

}  // namespace dptrain::parallel
