#include "dist/communicator.h"

// The process-group headers declare their classes only under USE_C10D_GLOO / USE_C10D_NCCL, which
// are defined here for the transports CMake found headers for.
#include "build_features.h"
#if DPTRAIN_WITH_GLOO && !defined(USE_C10D_GLOO)
#define USE_C10D_GLOO
#endif
#if DPTRAIN_WITH_NCCL && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL
#endif

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#if DPTRAIN_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if DPTRAIN_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "core/collective_wait.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "core/torch_compat.h"
#include "dist/job_store.h"

namespace dptrain::dist {
namespace {

using core::Error;
using core::ErrorCode;
using core::message_of;

#if DPTRAIN_WITH_GLOO
// Gloo's endpoint: the interface GLOO_SOCKET_IFNAME names (as in PyTorch), the loopback when the
// whole job is on this machine, else the address this host's name resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(bool one_machine) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  if (one_machine) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

}  // namespace

const char* transport_name(Transport transport) {
  return transport == Transport::kNccl ? "nccl" : "gloo";
}

bool nccl_available() {
#if DPTRAIN_WITH_NCCL
  return true;
#else
  return false;
#endif
}

struct Communicator::Group {
  c10::intrusive_ptr<core::compat::CollectiveGroup> collectives;
};

Communicator::Communicator(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                           Transport transport, torch::Device device,
                           std::chrono::milliseconds timeout, const std::string& key_prefix,
                           bool one_machine)
    : store_(std::move(store)),
      rank_(rank),
      world_size_(world_size),
      transport_(transport),
      group_(std::make_unique<Group>()) {
  // A prefix keeps dptrain's keys apart from a launcher's own keys in a shared store, each job
  // apart from others, and each generation of ranks apart from the last (PyTorch prefixes its keys
  // per attempt likewise).
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(key_prefix + "group", store_);
  keys_ = prefixed;
  const std::string rank_text = "rank " + std::to_string(rank_);
  try {
    store_->set(arrival_key(key_prefix, rank_), std::vector<uint8_t>{1});
    if (transport_ == Transport::kNccl) {
#if DPTRAIN_WITH_NCCL
      // NCCL binds its communicator to the current device.
      c10::impl::VirtualGuardImpl(device.type()).setDevice(device);
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      group_->collectives =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, rank_, world_size_, options);
#else
      (void)device;
      throw Error(ErrorCode::kDevice, rank_text + ": this LibTorch build has no NCCL",
                  "use parallel.dist_backend \"gloo\", or a CUDA build of LibTorch");
#endif
    } else {
#if DPTRAIN_WITH_GLOO
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(gloo_device(one_machine));
      group_->collectives =
          c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank_, world_size_, options);
#else
      throw Error(ErrorCode::kDevice, rank_text + ": this build of dptrain has no Gloo",
                  "use parallel.dist_backend \"nccl\" with GPUs, or rebuild with libgloo-dev");
#endif
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const std::vector<int> missing = never_arrived(*store_, key_prefix, world_size_);
    const std::string absent = missing.empty() ? "" : rank_list(missing) + " never arrived; ";
    throw Error(ErrorCode::kDistributed,
                rank_text + ": could not connect to the other " + std::to_string(world_size_ - 1) +
                    " ranks over " + transport_name(transport_) + " within " +
                    core::seconds_text(timeout) + ": " + absent + message_of(e),
                "every rank must start and reach this point; see the other ranks' errors");
  }
}

std::string arrival_key(const std::string& key_prefix, int rank) {
  return key_prefix + "arrived/" + std::to_string(rank);
}

std::vector<int> never_arrived(c10d::Store& store, const std::string& key_prefix, int world) {
  std::vector<int> missing;
  try {
    for (int r = 0; r < world; ++r) {
      if (!store.check({arrival_key(key_prefix, r)})) missing.push_back(r);
    }
  } catch (const std::exception&) {
    return {};  // the store is gone too: nothing to say about the ranks
  }
  return missing;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string list;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) list += i + 1 == ranks.size() ? " and " : ", ";
    list += std::to_string(ranks[i]);
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + list;
}

Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::join(const RankInfo& info, Transport transport,
                                                 torch::Device device,
                                                 std::chrono::milliseconds timeout) {
  JobStore job = open_job_store(info, plan_store(info, process_environment()), timeout);
  auto comm = std::make_unique<Communicator>(job.store, info.rank, info.world_size, transport,
                                             device, timeout, job.key_prefix, info.one_machine());
  comm->served_ = std::move(job.served);
  return comm;
}

void Communicator::fail(const std::string& what, const std::exception& cause) const {
  // A rank that stops on Ctrl-C breaks the collectives of the others, which got the same Ctrl-C.
  if (core::interrupt_requested()) {
    throw Error(ErrorCode::kInterrupted, "rank " + std::to_string(rank_) + ": stopped by Ctrl-C");
  }
  throw Error(ErrorCode::kDistributed,
              "rank " + std::to_string(rank_) + ": " + what + " failed: " + message_of(cause),
              "another rank has probably stopped: see its error; a rank that is alive but stuck "
              "is given up on after parallel.timeout_s");
}

Communicator::Pending::Pending(c10::intrusive_ptr<c10d::Work> work, const Communicator* owner,
                               std::string what)
    : work_(std::move(work)), owner_(owner), what_(std::move(what)) {}

void Communicator::Pending::wait() {
  try {
    const core::CollectiveWait waiting(what_);
    work_->wait();
  } catch (const std::exception& e) {
    owner_->fail(what_, e);
  }
}

Communicator::Pending Communicator::all_reduce_async(const torch::Tensor& tensor,
                                                     const std::string& what) {
  std::vector<torch::Tensor> tensors = {tensor};
  try {
    auto work = group_->collectives->allreduce(tensors, c10d::AllreduceOptions());
    ++all_reduces_launched_;
    return Pending(std::move(work), this, what);
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void Communicator::all_reduce(const torch::Tensor& tensor, const std::string& what) {
  all_reduce_async(tensor, what).wait();
}

void Communicator::broadcast(const torch::Tensor& tensor, int root, const std::string& what) {
  std::vector<torch::Tensor> tensors = {tensor};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  try {
    const core::CollectiveWait waiting(what);
    group_->collectives->broadcast(tensors, options)->wait();
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void Communicator::all_gather(const torch::Tensor& flat, const torch::Tensor& shard,
                              const std::string& what) {
  std::vector<torch::Tensor> inputs = {shard};
  try {
    const core::CollectiveWait waiting(what);
    if (transport_ == Transport::kNccl) {
      torch::Tensor output = flat;
      group_->collectives->_allgather_base(output, inputs[0])->wait();
    } else {
      std::vector<std::vector<torch::Tensor>> outputs(1);
      for (int r = 0; r < world_size_; ++r) {
        outputs[0].push_back(flat.narrow(0, r * shard.numel(), shard.numel()));
      }
      group_->collectives->allgather(outputs, inputs)->wait();
    }
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

Communicator::Pending Communicator::reduce_scatter_async(const torch::Tensor& shard,
                                                         const torch::Tensor& flat,
                                                         const std::string& what) {
  if (transport_ != Transport::kNccl) {
    throw Error(ErrorCode::kNotSupported,
                "rank " + std::to_string(rank_) + ": " + what + " needs NCCL's reduce-scatter",
                "this is a bug in dptrain: over Gloo, all-reduce and keep this rank's chunk");
  }
  try {
    torch::Tensor output = shard;
    torch::Tensor input = flat;
    auto work = group_->collectives->_reduce_scatter_base(output, input);
    return Pending(std::move(work), this, what);
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

std::vector<std::string> Communicator::all_gather_text(const std::string& key,
                                                       const std::string& mine) {
  const std::string prefix = "text/" + key + "/";
  std::vector<std::string> all;
  try {
    keys_->set(prefix + std::to_string(rank_), std::vector<uint8_t>(mine.begin(), mine.end()));
    for (int r = 0; r < world_size_; ++r) {
      const std::vector<uint8_t> bytes = keys_->get(prefix + std::to_string(r));
      all.emplace_back(bytes.begin(), bytes.end());
    }
  } catch (const std::exception& e) {
    fail("exchanging " + key + " through the store", e);
  }
  return all;
}

}  // namespace dptrain::dist
