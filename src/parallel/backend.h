// The one interface the trainer sees. A backend owns the model's copies on its devices and knows
// how a step's gradients come together: single has one copy; dp scatters a batch over replicas in
// one process and sums their gradients; ddp all-reduces across processes. World size 1 is just a
// case.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dptrain::parallel {

// Builds an optimizer of the configured kind over some tensors.
using OptimizerFactory =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  // Every device taking part, across ranks, in rank order (d2l's "on [cuda:0, cuda:1]").
  virtual std::vector<torch::Device> devices() const = 0;
  // Where this process's loader should put batches.
  virtual torch::Device input_device() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // The model's parameters (the master copy): what checkpoints, evaluation and model files read.
  virtual std::vector<torch::Tensor> parameters() = 0;
  // The master copy's buffers (BatchNorm's running statistics; see buffers.h for whose they are):
  // checkpoints, evaluation and model files carry them after the parameters.
  virtual std::vector<torch::Tensor> buffers() = 0;
  // The optimizer the trainer steps: one from `make` over parameters(), or under ZeRO one that
  // steps this rank's shard and keeps every rank's parameters equal.
  virtual std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerFactory& make) {
    return make(parameters());
  }
  // The tensors whose .grad the optimizer reads after synchronize_gradients(): the parameters, or
  // under ZeRO this rank's shard. Unscaling and clipping work on these.
  virtual std::vector<torch::Tensor> optimizer_parameters() { return parameters(); }
  // Whether optimizer_parameters() are a shard, different on each rank: figures taken from their
  // gradients (a norm, an inf/nan check) must then be summed with sum_over_shards().
  virtual bool shards_optimizer() const { return false; }
  virtual double sum_over_shards(double local) { return local; }
  virtual void set_training(bool training) = 0;

  // Whether the backward of the coming training forward completes the step's gradients (true), or
  // only adds to them locally, one micro-batch of several accumulated (DDP's no_sync): ddp then
  // communicates once per optimizer step. Backends that do not communicate ignore it.
  virtual void set_gradient_sync(bool /*sync*/) {}
  // Logits for a batch already on input_device().
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
  // After each backward: leaves the gradients summed so far in parameters()' .grad on every rank,
  // reduced over the ranks when the backward was synced (see set_gradient_sync).
  virtual void synchronize_gradients() = 0;
  // Sums each value over the ranks, in place (metrics and evaluation counts).
  virtual void all_reduce_sum(std::vector<double>& values) = 0;
  // Every rank's `mine`, in rank order: small texts (a path, a digest), exchanged once per `key`
  // through the rendezvous store. One process: {mine}.
  virtual std::vector<std::string> all_gather_text(const std::string& key,
                                                   const std::string& mine) {
    (void)key;
    return {mine};
  }
  // Seconds spent so far waiting for gradient communication that backward did not hide.
  virtual double communication_wait_seconds() const { return 0; }
  // The bytes of gradient storage this rank holds between steps: .grad, ddp's flat gradients, a
  // shard's.
  virtual int64_t gradient_bytes();
};

}  // namespace dptrain::parallel
