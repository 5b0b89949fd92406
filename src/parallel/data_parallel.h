// The dp backend: one process, one model copy per device, as torch.nn.DataParallel. The master
// copy is replica 0, on the first device, and the optimizer steps it. Each step:
//   1. the master's parameters go to the other replicas as one flat copy per device;
//   2. the batch is split along dim 0 into one chunk per replica (chunk_sizes);
//   3. the replicas run side by side, a thread per device (on CUDA each on a stream of its own);
//   4. their outputs are gathered on the output device, where the trainer takes the loss.
// The trainer's backward reaches only the gathered logits; finish_backward() then runs each
// replica's backward on its own thread (the autograd engine would run every CPU replica's on the
// calling thread, one after the other) and adds the replicas' flat gradients into the master's.
#pragma once

#include <c10/core/Stream.h>

#include <memory>
#include <optional>

#include "parallel/backend.h"
#include "parallel/flat_buffer.h"
#include "parallel/replica_threads.h"

namespace dptrain::parallel {

// How dp splits a batch of `batch` samples over `replicas`: sizes as even as they can be, larger
// ones first, and no empty chunk, so a batch smaller than the device count uses fewer replicas.
std::vector<int64_t> chunk_sizes(int64_t batch, size_t replicas);

class DataParallel : public Backend {
 public:
  // `devices` may repeat a device (["cpu", "cpu"]); outputs are gathered on `output_device`, which
  // is also where the loader puts batches.
  DataParallel(torch::nn::AnyModule model, std::vector<torch::Device> devices,
               torch::Device output_device);

  std::string name() const override { return "dp"; }
  std::vector<torch::Device> devices() const override { return devices_; }
  torch::Device input_device() const override { return output_device_; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }

  std::vector<torch::Tensor> parameters() override { return replicas_[0].params; }
  std::vector<torch::Tensor> buffers() override { return replicas_[0].buffers; }
  void set_training(bool training) override;
  torch::Tensor forward(const torch::Tensor& input) override;
  void finish_backward() override;
  void all_reduce_sum(std::vector<double>& /*values*/) override {}  // one process sees everything

 private:
  struct Replica {
    size_t index = 0;
    torch::Device device{torch::kCPU};
    torch::nn::AnyModule module;
    std::vector<torch::Tensor> params;  // views of flat_params
    std::vector<torch::Tensor> buffers;
    FlatBuffer flat_params;
    FlatBuffer flat_grads;  // replicas 1..: their parameters' .grad are views of it
    std::optional<c10::Stream> stream;
  };
  // What forward() keeps for finish_backward().
  struct PendingBackward {
    std::vector<torch::Tensor> outputs;  // each replica's, still attached to its graph
    torch::Tensor gathered;              // the detached logits the trainer's loss saw
    std::vector<int64_t> sizes;
  };

  Replica make_replica(size_t index, const torch::nn::AnyModule& master) const;
  // Runs work(replica) for the first n replicas side by side, each on its stream; a failure
  // becomes an error naming the replica, its device and `phase`.
  void run_replicas(size_t n, const char* phase, const std::function<void(Replica&)>& work);
  // Makes this thread's current streams on the output and first devices wait for the replicas.
  void join_replica_streams(size_t n);
  void copy_master_into(Replica& replica, bool for_backward);
  // The master's buffers (BatchNorm's statistics) into replicas 1..n-1, on the calling thread.
  void copy_master_buffers(size_t n);
  void add_replica_gradients(size_t n);

  std::vector<torch::Device> devices_;
  torch::Device output_device_;
  std::vector<Replica> replicas_;
  std::unique_ptr<ReplicaThreads> threads_;
  std::optional<PendingBackward> pending_;
  bool training_ = true;
};

}  // namespace dptrain::parallel
