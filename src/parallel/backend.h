// The one interface the trainer sees, and the one header of parallel/ that train/ includes. A
// backend owns the model's copies on its devices and knows how a step's gradients come together:
// single has one copy; dp scatters a batch over replicas in one process and sums their gradients;
// ddp all-reduces across processes. World size 1 is just a case. What the trainer needs of ZeRO
// (the optimizer's state gathered and sharded, memory figures) comes through it too.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "launch/environment.h"
#include "optim/param_state.h"

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
  // "[cpu]", "[cuda:0, cuda:1]": devices() as d2l lists them.
  std::string devices_text() const;
  // Waits for the work queued on input_device(), so that a timer read afterwards measures it.
  void synchronize_device() const;

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
  // The tensors whose .grad the optimizer reads after finish_backward(): the parameters, or
  // under ZeRO this rank's shard. Unscaling and clipping work on these.
  virtual std::vector<torch::Tensor> optimizer_parameters() { return parameters(); }
  // Whether optimizer_parameters() are a shard, different on each rank: figures taken from their
  // gradients (a norm, an inf/nan check) must then be summed with sum_over_shards().
  virtual bool shards_optimizer() const { return false; }
  virtual double sum_over_shards(double local) { return local; }
  // The optimizer's whole state, one entry per parameter in parameters()' order: what a checkpoint
  // holds. Every rank calls it: under ZeRO it is a collective in which each rank sends its shard,
  // and rank 0 alone gets the whole (the others an empty list).
  virtual optim::StateList optimizer_state(torch::optim::Optimizer& optimizer);
  // Loads a whole state in that layout, from any backend, ZeRO stage or world size: this rank
  // keeps its share (all of it, unsharded).
  virtual void load_optimizer_state(torch::optim::Optimizer& optimizer,
                                    const optim::StateList& whole);
  // The bytes of optimizer state this rank holds (under ZeRO, its shard's).
  virtual int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);
  virtual void set_training(bool training) = 0;

  // Whether the backward of the coming training forward completes the step's gradients (true), or
  // only adds to them locally, one micro-batch of several accumulated (DDP's no_sync): ddp then
  // communicates once per optimizer step. Backends that do not communicate ignore it.
  virtual void set_gradient_sync(bool /*sync*/) {}
  // Logits for a batch already on input_device().
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
  // After the trainer's backward of each micro-batch's loss, which reaches this backend's own
  // graph: completes that backward (dp runs its replicas' backward here; ddp waits for the
  // all-reduces its hooks started) and leaves the gradients summed so far in parameters()' .grad
  // on every rank, reduced over the ranks when the backward was synced (see set_gradient_sync).
  virtual void finish_backward() = 0;
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
  // The bytes this rank has handed to collectives so far (distributed::Communicator's count).
  virtual int64_t communication_bytes() const { return 0; }

  // The optimizer steps the run has taken when it starts training (0, or a checkpoint's count), and
  // after each step, counting it: ddp's PowerSGD counts its warm-up in them, and local SGD averages
  // the ranks' parameters when one ends a period.
  virtual void start_at_step(int64_t /*steps_taken*/) {}
  virtual void after_optimizer_step(int64_t /*steps_taken*/) {}

  // What differs between the ranks and an exact resume needs of each (local SGD's parameters and
  // optimizer state between averagings, PowerSGD's error feedback): every rank's, one row each of
  // a [world size, n] CPU tensor, on rank 0 (a collective every rank calls; the others get an
  // undefined tensor), undefined where the ranks hold the same.
  virtual torch::Tensor gather_rank_states(torch::optim::Optimizer& /*optimizer*/) { return {}; }
  // n for a checkpoint whose optimizer state (the one every rank applies first) is `optimizer`; 0:
  // none expected.
  virtual int64_t rank_state_numel(const optim::StateList& /*optimizer*/) { return 0; }
  // Puts this rank's row (after the checkpoint's optimizer state is applied).
  virtual void load_rank_state(torch::optim::Optimizer& /*optimizer*/,
                               const torch::Tensor& /*row*/) {}
  // The bytes of gradient storage this rank holds between steps: .grad, ddp's flat gradients, a
  // shard's.
  virtual int64_t gradient_bytes();
};

// Builds the backend that `parallel.backend` names, around a freshly initialised model, for this
// process's place in the job (`rank`: world size 1 when it runs alone). `sync_batchnorm`
// (model.sync_batchnorm): ddp's BatchNorm layers normalise over the global batch. (factory.cpp)
std::unique_ptr<Backend> make_backend(const config::ParallelConfig& config,
                                      torch::nn::AnyModule model, const launch::RankInfo& rank,
                                      bool sync_batchnorm = false);

}  // namespace dptrain::parallel
