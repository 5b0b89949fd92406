// How a gradient bucket crosses the network (parallel.grad_compression), as DDP's communication
// hooks do it:
//   none:     the bucket itself, all-reduced by the GradRoute (grad_route.h);
//   fp16:     a float16 copy all-reduced, the sum written back (fp16_compress_hook);
//   bf16:     a bfloat16 copy, all-reduced over NCCL (bf16_compress_hook). LibTorch 1.13's Gloo has
//             no bfloat16 sum, so over Gloo every rank's copy is all-gathered and the copies are
//             summed in float32, in rank order, the same on every rank: for two ranks the same
//             bytes as a ring all-reduce, for W ranks W-1 times the copy against 2(W-1)/W;
//   powersgd: a low-rank approximation with error feedback (powersgd.h).
// Every bucket arrives divided by the world size (a float16 sum of means cannot overflow where the
// gradients fit) and leaves holding the mean over the ranks.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "config/choices.h"
#include "distributed/communicator.h"

namespace dptrain::parallel {

// A bucket's reduction under way; finish() waits for it (starting the collectives that follow, if
// any) and leaves the mean in the bucket. abandon(), after a step that failed: waits for what was
// started, which writes into memory the next step uses, and starts nothing more.
class InFlight {
 public:
  virtual ~InFlight() = default;
  virtual void finish() = 0;
  virtual void abandon() = 0;
};

// One collective under way whose result is where it must be once it completes.
class PendingReduction : public InFlight {
 public:
  explicit PendingReduction(distributed::Communicator::Pending pending)
      : pending_(std::move(pending)) {}
  void finish() override { pending_.wait(); }
  void abandon() override { pending_.wait(); }

 private:
  distributed::Communicator::Pending pending_;
};

// Where a bucket's parameters lie in it, in elements: what PowerSGD shapes into matrices.
struct BucketShape {
  struct Member {
    int64_t offset = 0;
    std::vector<int64_t> sizes;
  };
  int64_t numel = 0;
  std::vector<Member> members;
};

struct CompressionSpec {
  config::GradCompression kind = config::GradCompression::kNone;
  int64_t powersgd_rank = 1;
  int64_t powersgd_start_step = 0;
  double powersgd_min_compression = 2;
};

class GradCompression {
 public:
  virtual ~GradCompression() = default;
  // Starts reducing bucket `index` (divided by the world size already) of the backward that
  // completes optimizer step `step` (0-based).
  virtual std::unique_ptr<InFlight> start(distributed::Communicator& comm,
                                          const torch::Tensor& bucket, size_t index,
                                          int64_t step) = 0;
  // What this rank alone holds and an exact resume needs (PowerSGD's error feedback and factors),
  // as one flat tensor of the gradients' dtype that loading writes into; undefined where there is
  // none.
  virtual torch::Tensor state() { return {}; }
};

// The compression `spec` names for buckets of these shapes, of gradients with `options` (dtype
// and device); nullptr for none (the route's own collective).
std::unique_ptr<GradCompression> make_compression(const CompressionSpec& spec,
                                                  const std::vector<BucketShape>& buckets,
                                                  torch::TensorOptions options,
                                                  distributed::Transport transport);

}  // namespace dptrain::parallel
