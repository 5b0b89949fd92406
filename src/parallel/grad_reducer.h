// DistributedDataParallel's gradient reduction, in C++: the parameters' gradients are laid out in
// one flat buffer (a FlatBuffer in reverse registration order, the order backward produces them),
// cut into buckets of about `bucket_bytes`. As PyTorch's reducer with gradient_as_bucket_view,
// each parameter's .grad is its slot of the flat buffer (an alias made with set_(), which
// LibTorch's Optimizer::zero_grad can detach_(), unlike a view), so that autograd accumulates
// straight into the bucket: no gradient is copied in before the all-reduce nor out after it. A
// hook after each parameter's gradient accumulation marks it ready, and a bucket whose gradients
// are all in is divided by the world size and reduced at once, asynchronously, while backward goes
// on. Buckets are launched strictly in index order, so every rank issues the same sequence of
// collectives whatever order its hooks fire in. finish() waits and hands the means to the
// GradRoute, which puts them where the optimizer reads them. A route that frees the flat buffer
// between steps (ZeRO stage 2) keeps .grad apart: the hook copies each gradient into its slot.
// Gradient accumulation (DDP's no_sync): backwards outside prepare_for_backward() add into .grad
// unreduced; the next reduced backward adds its own gradient to it (autograd's sum, .grad + new),
// and the sum is reduced in one go.
// A GradCompression (parallel.grad_compression) may carry each bucket instead of the route's
// all-reduce: see grad_compression.h.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/torch_compat.h"
#include "distributed/communicator.h"
#include "parallel/flat_buffer.h"
#include "parallel/grad_compression.h"
#include "parallel/grad_route.h"

namespace dptrain::parallel {

class GradReducer {
 public:
  struct Bucket {
    std::vector<size_t> params;  // indices into the parameter list, in bucket order
    int64_t begin = 0;           // where the bucket starts in the flat gradients
    int64_t numel = 0;           // the bucket's size, alignment gaps and end padding included
  };

  // Registers a hook on every parameter that requires a gradient; the reducer must outlive the
  // parameters' backward passes (its destructor removes the hooks).
  GradReducer(std::vector<torch::Tensor> params, distributed::Communicator& comm,
              int64_t bucket_bytes, std::unique_ptr<GradRoute> route = all_reduce_into_grad(),
              const CompressionSpec& compression = {});
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  // Before each forward whose backward is to be reduced; `include_accumulated`: the parameters'
  // .grad holds earlier unreduced micro-batches' gradients, to be summed in before the reduction.
  void prepare_for_backward(bool include_accumulated = false);
  // After backward: launches any bucket still waiting (a parameter that got no gradient this step
  // counts as zero, the same on every rank), waits for all, and hands the mean over the ranks of
  // this backward's gradients to the route.
  void finish();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // The bytes of the flat gradients held now (none between steps where the route frees them).
  int64_t gradient_bytes() const { return grads_.bytes(); }
  // Whether each parameter's .grad is its slot of the flat gradients, an alias of that memory (the
  // bytes above are then all the gradient memory there is), rather than a tensor of its own.
  bool gradients_are_views() const { return views_; }
  // Seconds finish() has spent waiting for all-reduces since construction: the part of
  // communication that backward did not hide.
  double wait_seconds() const { return wait_seconds_; }
  // The optimizer steps reduced so far, which PowerSGD's warm-up counts: set by a resumed run.
  void set_reduced_steps(int64_t steps) { reduced_steps_ = steps; }
  // The compression's per-rank state (grad_compression.h); undefined without one or where it has
  // none.
  torch::Tensor compression_state() const {
    return compression_ ? compression_->state() : torch::Tensor();
  }

 private:
  // Refuses, before autograd touches .grad, a backward that cannot be reduced.
  void check_backward(size_t param) const;
  void on_accumulated(size_t param);
  // Makes `param`'s .grad its slot, keeping what .grad held when `keep` (else zero, which
  // `slot_is_zero` says it already is).
  void adopt_gradient(size_t param, bool keep, bool slot_is_zero);
  void launch_ready_buckets();
  void launch(size_t bucket);
  void compress(const CompressionSpec& spec);

  std::vector<torch::Tensor> params_;
  distributed::Communicator& comm_;
  std::unique_ptr<GradRoute> route_;
  std::unique_ptr<GradCompression> compression_;  // nullptr: the route's collective
  FlatBuffer grads_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // parameter -> bucket
  bool views_ = false;
  // Each parameter's gradient accumulator (held: autograd keeps only a weak reference, and a new
  // one would not have the hook) and the key of the hook on it.
  std::vector<core::compat::GradAccumulatorPtr> accumulators_;
  std::vector<uintptr_t> hooks_;
  std::vector<unsigned> checks_;  // the tensor hooks of check_backward()
  // Per step: which parameters have their gradient in, how many each bucket still waits for,
  // the next bucket to launch and the reductions in flight.
  std::vector<bool> ready_;
  std::vector<size_t> missing_;
  size_t next_launch_ = 0;
  std::vector<std::unique_ptr<InFlight>> in_flight_;
  bool armed_ = false;
  bool include_accumulated_ = false;
  double wait_seconds_ = 0;
  int64_t reduced_steps_ = 0;
};

// How parameters of these sizes (in bytes, in registration order) fall into buckets of at most
// `bucket_bytes` (a parameter larger than that gets a bucket of its own): parameter indices per
// bucket, the last registered first. Separate so that tests can check the layout rule directly.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& param_bytes,
                                                int64_t bucket_bytes);
// The parameter indices in flat order: the buckets of `params` with `bucket_bytes`, end to end.
std::vector<size_t> bucket_order(const std::vector<torch::Tensor>& params, int64_t bucket_bytes);

}  // namespace dptrain::parallel
