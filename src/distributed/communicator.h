// The ranks of a job talking through PyTorch's c10d: a rendezvous store (store/job_store.h),
// then a Gloo (CPU, or CUDA tensors) or NCCL (CUDA) process group for the collectives. Nothing else
// in dptrain includes c10d's process-group headers; errors come out as dptrain errors naming the
// rank.
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distributed/endpoint.h"
#include "launch/environment.h"

namespace dptrain::store {
class ServedStore;
}

namespace dptrain::distributed {

class Heartbeat;

enum class Transport { kGloo, kNccl };

const char* transport_name(Transport transport);
// Whether this LibTorch build has NCCL (the CUDA builds do; Debian's CPU build does not).
bool nccl_available();

class Communicator {
 public:
  // Joins the job `info` describes: serves the store (rank 0, when no launcher does) or reaches
  // it, as store/plan.h decides, chooses where to listen (distributed/endpoint.h), says
  // so in the store and starts beating (distributed/heartbeat.h), then builds the group. Waits for
  // the store up to `timeout`, then for the group up to `timeout` and a few seconds more at most:
  // then the heartbeat's watchdog ends the process, naming the ranks that never came.
  static std::unique_ptr<Communicator> join(const launch::RankInfo& info, Transport transport,
                                            torch::Device device,
                                            std::chrono::milliseconds timeout);

  // A group over an existing store (tests run ranks as threads over one in-process store).
  // `key_prefix`: of every key this group writes (the job's and its restart count's), so that a
  // restarted job never reads what the dead ranks left in a store that outlived them.
  // `endpoint`: where Gloo listens (the loopback, for ranks of one machine). `heartbeat`: join's,
  // whose watchdog bounds the wait for the group and whose connection reads the store after a
  // failure (the main one may wait out the timeout on a store that is gone); none in tests.
  Communicator(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size, Transport transport,
               torch::Device device, std::chrono::milliseconds timeout,
               const std::string& key_prefix = "dptrain/none/open/0/",
               const Endpoint& endpoint = {"127.0.0.1", "lo", "every rank is on this machine"},
               Heartbeat* heartbeat = nullptr);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  Transport transport() const { return transport_; }

  // An all-reduce (sum) in flight; wait() blocks until `tensor` holds the sum over the ranks.
  class Pending {
   public:
    Pending(c10::intrusive_ptr<c10d::Work> work, const Communicator* owner, std::string what);
    void wait();

   private:
    c10::intrusive_ptr<c10d::Work> work_;
    const Communicator* owner_;
    std::string what_;
  };

  // `what` names the operation in errors ("the all-reduce of gradient bucket 2").
  Pending all_reduce_async(const torch::Tensor& tensor, const std::string& what);
  void all_reduce(const torch::Tensor& tensor, const std::string& what);
  void broadcast(const torch::Tensor& tensor, int root, const std::string& what);
  // Every rank's `shard` end to end in `flat` (world_size() * shard.numel() elements, rank order).
  // NCCL gathers straight into `flat`; Gloo, which has no flat all-gather in LibTorch 1.13, into
  // views of its equal chunks. Chosen by transport, never by catching a failed collective.
  void all_gather(const torch::Tensor& flat, const torch::Tensor& shard, const std::string& what);
  Pending all_gather_async(const torch::Tensor& flat, const torch::Tensor& shard,
                           const std::string& what);
  // Every rank's `shard` end to end in rank 0's `flat` (world_size() * shard.numel() elements);
  // the other ranks pass an undefined `flat`.
  void gather_to_rank0(const torch::Tensor& flat, const torch::Tensor& shard,
                       const std::string& what);
  // NCCL only: `shard` becomes chunk rank() of the sum over the ranks of `flat` (world_size() *
  // shard.numel() elements). Gloo callers all-reduce and keep their chunk instead.
  Pending reduce_scatter_async(const torch::Tensor& shard, const torch::Tensor& flat,
                               const std::string& what);
  // Every rank's `mine`, in rank order, through the store (small strings: device names).
  std::vector<std::string> all_gather_text(const std::string& key, const std::string& mine);

  // How many all-reduces this rank has launched: tests count them against the buckets.
  int64_t all_reduces_launched() const { return all_reduces_launched_; }
  // The bytes of the tensors this rank has handed to collectives since it joined: an all-reduce's
  // or a broadcast's tensor, an all-gather's shard, a reduce-scatter's input. What crosses the
  // network follows from it: a ring all-reduce sends 2(W-1)/W of its tensor, an all-gather W-1
  // times its shard.
  int64_t payload_bytes() const { return payload_bytes_; }

  // Rethrows a failure inside a collective as a dptrain error naming this rank, `what`, and the
  // ranks that stopped beating (or the store that stopped answering), with their nodes and
  // addresses.
  [[noreturn]] void fail(const std::string& what, const std::exception& cause) const;

 private:
  // "rank 1 (node 1, 10.78.0.2 on eth0) stopped beating", or "" without a heartbeat or a
  // culprit; waits two beats to tell a silent rank from a live one.
  std::string who_went_silent() const;

  struct Group;
  // Rank 0's, when it serves the store: outlives the rest.
  std::unique_ptr<store::ServedStore> served_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Store> keys_;  // store_ under the job's and generation's prefix
  int rank_;
  int world_size_;
  Transport transport_;
  std::unique_ptr<Group> group_;
  int64_t all_reduces_launched_ = 0;
  int64_t payload_bytes_ = 0;
  // Communicator::join's: stopped before the store it talks to.
  std::unique_ptr<Heartbeat> heartbeat_;
  int ranks_per_node_ = 1;   // a rank's node when it never said: rank / ranks_per_node_
  std::string store_where_;  // "10.78.0.1:29500 (node 0)": for a store that stops answering
};

}  // namespace dptrain::distributed
