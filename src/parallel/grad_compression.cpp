#include "parallel/grad_compression.h"

#include "parallel/powersgd.h"

namespace dptrain::parallel {
namespace {

std::string bucket_name(size_t index, const char* how) {
  return "the all-reduce of gradient bucket " + std::to_string(index) + " (" + how + ")";
}

// The low-precision copy's sum, written back into the bucket once it is in.
class CastBack : public InFlight {
 public:
  CastBack(torch::Tensor bucket, torch::Tensor low, distributed::Communicator::Pending pending)
      : bucket_(std::move(bucket)), low_(std::move(low)), pending_(std::move(pending)) {}
  void finish() override {
    pending_.wait();
    bucket_.copy_(low_);
  }
  void abandon() override { pending_.wait(); }

 private:
  torch::Tensor bucket_;
  torch::Tensor low_;
  distributed::Communicator::Pending pending_;
};

// fp16, and bf16 where the transport sums bfloat16 (NCCL).
class CastAllReduce : public GradCompression {
 public:
  CastAllReduce(torch::ScalarType dtype, const char* name) : dtype_(dtype), name_(name) {}
  std::unique_ptr<InFlight> start(distributed::Communicator& comm, const torch::Tensor& bucket,
                                  size_t index, int64_t /*step*/) override {
    torch::Tensor low = bucket.to(dtype_);
    auto pending = comm.all_reduce_async(low, bucket_name(index, name_));
    return std::make_unique<CastBack>(bucket, std::move(low), std::move(pending));
  }

 private:
  torch::ScalarType dtype_;
  const char* name_;
};

// Every rank's bfloat16 copy, summed in float32 in rank order once all are in.
class SumGathered : public InFlight {
 public:
  SumGathered(torch::Tensor bucket, torch::Tensor gathered, int world,
              distributed::Communicator::Pending pending)
      : bucket_(std::move(bucket)),
        gathered_(std::move(gathered)),
        world_(world),
        pending_(std::move(pending)) {}
  void finish() override {
    pending_.wait();
    const torch::Tensor copies = gathered_.view(torch::kBFloat16).view({world_, -1});
    torch::Tensor sum = copies[0].to(torch::kFloat32);
    for (int r = 1; r < world_; ++r) sum.add_(copies[r].to(torch::kFloat32));
    bucket_.copy_(sum);
  }
  void abandon() override { pending_.wait(); }

 private:
  torch::Tensor bucket_;
  torch::Tensor gathered_;
  int world_;
  distributed::Communicator::Pending pending_;
};

// bf16 over Gloo, which sums no bfloat16 in LibTorch 1.13: the copies travel as bytes.
class Bf16AllGather : public GradCompression {
 public:
  std::unique_ptr<InFlight> start(distributed::Communicator& comm, const torch::Tensor& bucket,
                                  size_t index, int64_t /*step*/) override {
    const torch::Tensor bytes = bucket.to(torch::kBFloat16).view(torch::kUInt8);
    torch::Tensor gathered = torch::empty({comm.world_size() * bytes.numel()}, bytes.options());
    auto pending = comm.all_gather_async(
        gathered, bytes, "the all-gather of gradient bucket " + std::to_string(index) + " (bf16)");
    return std::make_unique<SumGathered>(bucket, std::move(gathered), comm.world_size(),
                                         std::move(pending));
  }
};

}  // namespace

std::unique_ptr<GradCompression> make_compression(const CompressionSpec& spec,
                                                  const std::vector<BucketShape>& buckets,
                                                  torch::TensorOptions options,
                                                  distributed::Transport transport) {
  switch (spec.kind) {
    case config::GradCompression::kNone:
      return nullptr;
    case config::GradCompression::kFp16:
      return std::make_unique<CastAllReduce>(torch::kFloat16, "fp16");
    case config::GradCompression::kBf16:
      if (transport == distributed::Transport::kNccl) {
        return std::make_unique<CastAllReduce>(torch::kBFloat16, "bf16");
      }
      return std::make_unique<Bf16AllGather>();
    case config::GradCompression::kPowerSgd:
      return std::make_unique<PowerSgd>(spec, buckets, options);
  }
  return nullptr;
}

}  // namespace dptrain::parallel
