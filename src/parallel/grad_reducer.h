// DistributedDataParallel's gradient reduction, in C++: the parameters' gradients are laid out in
// flat buckets of about `bucket_bytes` (in reverse registration order, the order backward produces
// them); an autograd hook copies each gradient into its bucket as soon as backward computes it,
// and a bucket whose gradients are all in is all-reduced at once, asynchronously, while backward
// goes on. Buckets are launched strictly in index order, so every rank issues the same sequence of
// collectives whatever order its hooks fire in. finish() waits and writes the averages to .grad.
// Gradient accumulation (DDP's no_sync): backwards outside prepare_for_backward() add into .grad
// unreduced; the next reduced backward then reduces .grad plus its own gradient, in one go.
// ZeRO stage 2 (see zero_shard.h) keeps only its shard of the reduced gradients: finish() then
// leaves .grad alone, the buckets are released between steps, and over NCCL the one bucket is
// reduce-scattered instead of all-reduced.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "distributed/communicator.h"

namespace dptrain::parallel {

class GradReducer {
 public:
  struct Bucket {
    std::vector<size_t> params;  // indices into the parameter list, in bucket order
    std::vector<int64_t> offsets;
    int64_t numel = 0;   // the bucket's size, padding included
    torch::Tensor flat;  // on the parameters' device; undefined while released
    int64_t bytes() const {
      return flat.defined() ? flat.numel() * static_cast<int64_t>(flat.element_size()) : 0;
    }
  };

  // Registers a hook on every parameter that requires a gradient; the reducer must outlive the
  // parameters' backward passes (its destructor removes the hooks). `scatter_into` (NCCL, ZeRO
  // stage 2): every parameter in one bucket, padded with zeros to world_size() times its size,
  // and reduce-scattered into it rather than all-reduced.
  GradReducer(std::vector<torch::Tensor> params, distributed::Communicator& comm,
              int64_t bucket_bytes, torch::Tensor scatter_into = {});
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  // Before each forward whose backward is to be reduced; `include_accumulated`: the parameters'
  // .grad holds earlier unreduced micro-batches' gradients, to be summed in before the reduction.
  void prepare_for_backward(bool include_accumulated = false);
  // After backward: launches any bucket still waiting (a parameter that got no gradient this step
  // counts as zero, the same on every rank), waits for all, and leaves in every parameter's .grad
  // the mean over the ranks of this backward's gradient (unless `write_gradients` is false: the
  // means are then in the buckets alone, or in `scatter_into`).
  void finish(bool write_gradients = true);
  // Frees the buckets' memory until the next prepare_for_backward() (ZeRO stage 2 between steps).
  void release_buckets();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Seconds finish() has spent waiting for all-reduces since construction: the part of
  // communication that backward did not hide.
  double wait_seconds() const { return wait_seconds_; }

 private:
  void on_gradient(size_t param, const torch::Tensor& grad);
  void launch_ready_buckets();
  void launch(size_t bucket);
  // The part of its bucket that parameter `param` occupies.
  torch::Tensor slot_view(size_t param);

  std::vector<torch::Tensor> params_;
  distributed::Communicator& comm_;
  torch::Tensor scatter_into_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // parameter -> bucket
  std::vector<size_t> slot_of_;    // parameter -> position within its bucket
  std::vector<unsigned> hooks_;
  // Per step: which parameters have their gradient in, how many each bucket still waits for,
  // the next bucket to launch and the all-reduces in flight.
  std::vector<bool> ready_;
  std::vector<size_t> missing_;
  size_t next_launch_ = 0;
  std::vector<distributed::Communicator::Pending> pending_;
  bool armed_ = false;
  bool include_accumulated_ = false;
  double wait_seconds_ = 0;
};

// How parameters of these sizes (in bytes, in registration order) fall into buckets of at most
// `bucket_bytes` (a parameter larger than that gets a bucket of its own): parameter indices per
// bucket, the last registered first. Separate so that tests can check the layout rule directly.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& param_bytes,
                                                int64_t bucket_bytes);

}  // namespace dptrain::parallel
