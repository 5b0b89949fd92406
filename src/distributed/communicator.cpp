#include "distributed/communicator.h"

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

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/collective_wait.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "core/torch_compat.h"
#include "core/wall_clock.h"
#include "distributed/heartbeat.h"
#include "distributed/peers.h"
#include "distributed/route.h"
#include "store/job_store.h"

namespace dptrain::distributed {
namespace {

using core::Error;
using core::ErrorCode;
using core::message_of;

#if DPTRAIN_WITH_GLOO
// Gloo's endpoint as distributed/endpoint.h chose it: an address, or an interface
// (GLOO_SOCKET_IFNAME).
std::shared_ptr<::gloo::transport::Device> gloo_device(const Endpoint& endpoint) {
  if (endpoint.address.empty()) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(endpoint.interface);
  }
  return c10d::ProcessGroupGloo::createDeviceForHostname(endpoint.address);
}
#endif

constexpr std::chrono::milliseconds kBeatPeriod{1000};
// How long after the timeout the watchdog waits before it ends a rank still stuck in the group's
// first connect: Gloo's own timeout error, which says more, comes first when it comes at all.
constexpr std::chrono::milliseconds kWatchdogGrace{3000};

// NCCL's sockets (its bootstrap, and its transport without InfiniBand) on the interface that
// reaches the master, unless the user named one.
void point_nccl_at(const Endpoint& endpoint, const launch::RankInfo& info) {
  if (info.one_machine() || endpoint.interface.empty()) return;
  if (const char* given = std::getenv("NCCL_SOCKET_IFNAME"); given && *given) return;
  setenv("NCCL_SOCKET_IFNAME", endpoint.interface.c_str(), 1);
}

// Disarms the watchdog however the group's forming ends: a verdict must not end a rank that is
// already reporting its own error, nor one whose group formed.
struct Disarm {
  Heartbeat* heartbeat;
  ~Disarm() {
    if (heartbeat != nullptr) heartbeat->disarm();
  }
};

// The watchdog's question while the group forms: did another rank give up (then end now, with
// its reason), or is the deadline past (then name who never came)?
Heartbeat::Check group_watch(int rank, std::chrono::milliseconds timeout) {
  const std::string who = "rank " + std::to_string(rank);
  return [=](const PeerBook& book, bool store_answers,
             bool past_deadline) -> std::optional<Heartbeat::Verdict> {
    if (store_answers) {
      if (const auto failure = book.first_failure(); failure && failure->first != rank) {
        return Heartbeat::Verdict{who + ": rank " + std::to_string(failure->first) +
                                      " gave up before the group formed: " + failure->second,
                                  "see that rank's error"};
      }
    }
    if (!past_deadline) return std::nullopt;
    std::string why = "the store does not answer";
    if (store_answers) {
      const std::vector<int> missing = book.never_arrived();
      why = missing.empty() ? "every rank arrived, but not every connection was made"
                            : rank_list(missing) + " never arrived";
    }
    return Heartbeat::Verdict{
        who + ": the group did not form within " + core::seconds_text(timeout) + ": " + why,
        "every rank must start and reach the others' addresses (rank 0's log says where it "
        "listens); check the network between the machines, or set GLOO_SOCKET_IFNAME"};
  };
}

// The process group over `transport`: NCCL's, bound to `device`, or Gloo's at `endpoint`.
c10::intrusive_ptr<core::compat::CollectiveGroup> make_group(
    Transport transport, const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    torch::Device device, std::chrono::milliseconds timeout, const Endpoint& endpoint) {
  (void)device;  // one of the two is unused where a build lacks NCCL or Gloo
  (void)endpoint;
  if (transport == Transport::kNccl) {
#if DPTRAIN_WITH_NCCL
    // NCCL binds its communicator to the current device.
    c10::impl::VirtualGuardImpl(device.type()).setDevice(device);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
#else
    throw Error(ErrorCode::kDevice,
                "rank " + std::to_string(rank) + ": this LibTorch build has no NCCL",
                "use parallel.dist_backend \"gloo\", or a CUDA build of LibTorch");
#endif
  }
#if DPTRAIN_WITH_GLOO
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(gloo_device(endpoint));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
#else
  throw Error(ErrorCode::kDevice,
              "rank " + std::to_string(rank) + ": this build of dptrain has no Gloo",
              "use parallel.dist_backend \"nccl\" with GPUs, or rebuild with libgloo-dev");
#endif
}

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
                           const Endpoint& endpoint, Heartbeat* heartbeat)
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
  // After a failure the store may be gone too: the heartbeat's connection gives up within seconds.
  PeerBook book = heartbeat ? heartbeat->book() : PeerBook(store_, key_prefix, world_size_);
  if (heartbeat) {
    heartbeat->arm(std::chrono::steady_clock::now() + timeout + kWatchdogGrace,
                   group_watch(rank_, timeout));
  }
  const Disarm disarm{heartbeat};
  const core::Stopwatch waited;
  try {
    store_->set(arrival_key(key_prefix, rank_), std::vector<uint8_t>{1});
    group_->collectives =
        make_group(transport_, prefixed, rank_, world_size_, device, timeout, endpoint);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const std::vector<int> missing = book.never_arrived();
    const std::string absent = missing.empty() ? "" : rank_list(missing) + " never arrived; ";
    // The time really waited: a connection refused or broken (a stranger who reached a loopback
    // port first, say) fails long before the timeout.
    const std::string when = core::waited_text(
        std::chrono::milliseconds(static_cast<int64_t>(waited.seconds() * 1000)), timeout);
    const std::string message =
        rank_text + ": could not connect to the other " + std::to_string(world_size_ - 1) +
        " ranks over " + transport_name(transport_) + " " + when + ": " + absent + message_of(e);
    book.post_failure(rank_, message);
    throw Error(ErrorCode::kDistributed, message,
                "every rank must start and reach this point; see the other ranks' errors");
  }
}

Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::join(const launch::RankInfo& info, Transport transport,
                                                 torch::Device device,
                                                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  refuse_loopback_master(info);
  store::JobStore job =
      store::open_job_store(info, store::plan_store(info, launch::process_environment()), timeout);
  job.store->set(arrival_key(job.key_prefix, info.rank), std::vector<uint8_t>{1});
  PeerBook book(job.store, job.key_prefix, info.world_size);
  const Endpoint endpoint = choose_endpoint(info, launch::process_environment(), book, deadline);
  if (transport == Transport::kNccl) point_nccl_at(endpoint, info);
  const std::string address =
      endpoint.address.empty() ? address_of_interface(endpoint.interface) : endpoint.address;
  book.publish(info.rank, {info.node_rank, address, endpoint.interface, core::host_name()});
  spdlog::info("ddp: rank {} {} {}", info.rank,
               transport == Transport::kGloo ? "listens on" : "reaches the others from",
               describe(endpoint));
  auto heartbeat = std::make_unique<Heartbeat>(
      PeerBook(job.connect_again(2 * kBeatPeriod), job.key_prefix, info.world_size), info.rank,
      kBeatPeriod);
  auto comm =
      std::make_unique<Communicator>(job.store, info.rank, info.world_size, transport, device,
                                     timeout, job.key_prefix, endpoint, heartbeat.get());
  comm->served_ = std::move(job.served);
  comm->heartbeat_ = std::move(heartbeat);
  comm->ranks_per_node_ = std::max(info.local_world_size, 1);
  comm->store_where_ = info.master_addr + ":" + std::to_string(info.master_port) + " (node 0)";
  return comm;
}

void Communicator::fail(const std::string& what, const std::exception& cause) const {
  // A rank that stops on Ctrl-C breaks the collectives of the others, which got the same Ctrl-C.
  if (core::interrupt_requested()) {
    throw Error(ErrorCode::kInterrupted, "rank " + std::to_string(rank_) + ": stopped by Ctrl-C");
  }
  const std::string silent = who_went_silent();
  if (!silent.empty()) {
    throw Error(ErrorCode::kDistributed,
                "rank " + std::to_string(rank_) + ": " + what + " failed: " + silent + " (" +
                    message_of(cause) + ")",
                "check that machine: whether its ranks are running (their own errors say why "
                "they stopped), and whether this machine reaches it (network, firewall)");
  }
  throw Error(ErrorCode::kDistributed,
              "rank " + std::to_string(rank_) + ": " + what + " failed: " + message_of(cause),
              "another rank has probably stopped: see its error; a rank that is alive but stuck "
              "is given up on after parallel.timeout_s");
}

std::string Communicator::who_went_silent() const {
  if (!heartbeat_) return "";
  const std::chrono::milliseconds silence = heartbeat_->store_silence();
  if (silence.count() > 0) {
    return "the store at " + store_where_ + " has not answered this rank for " +
           core::seconds_text(silence) + ": node 0 is down, or unreachable from here";
  }
  const PeerBook& book = heartbeat_->book();
  const std::vector<int64_t> before = book.beats();
  std::this_thread::sleep_for(2 * heartbeat_->period() + std::chrono::milliseconds(200));
  const std::vector<int64_t> after = book.beats();
  if (before.empty() || after.empty()) return "";
  std::string silent;
  int count = 0;
  for (int r = 0; r < world_size_; ++r) {
    if (r == rank_ || after[r] != before[r]) continue;
    silent += (count++ == 0 ? "" : ", ") + describe_peer(r, r / ranks_per_node_, book.record(r));
  }
  if (count == 0) return "";
  return silent + (count == 1 ? " has" : " have") + " stopped beating";
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
    payload_bytes_ += static_cast<int64_t>(tensor.nbytes());
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
    payload_bytes_ += static_cast<int64_t>(tensor.nbytes());
    group_->collectives->broadcast(tensors, options)->wait();
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void Communicator::all_gather(const torch::Tensor& flat, const torch::Tensor& shard,
                              const std::string& what) {
  all_gather_async(flat, shard, what).wait();
}

Communicator::Pending Communicator::all_gather_async(const torch::Tensor& flat,
                                                     const torch::Tensor& shard,
                                                     const std::string& what) {
  std::vector<torch::Tensor> inputs = {shard};
  try {
    c10::intrusive_ptr<c10d::Work> work;
    if (transport_ == Transport::kNccl) {
      torch::Tensor output = flat;
      work = group_->collectives->_allgather_base(output, inputs[0]);
    } else {
      std::vector<std::vector<torch::Tensor>> outputs(1);
      for (int r = 0; r < world_size_; ++r) {
        outputs[0].push_back(flat.narrow(0, r * shard.numel(), shard.numel()));
      }
      work = group_->collectives->allgather(outputs, inputs);
    }
    payload_bytes_ += static_cast<int64_t>(shard.nbytes());
    return Pending(std::move(work), this, what);
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void Communicator::gather_to_rank0(const torch::Tensor& flat, const torch::Tensor& shard,
                                   const std::string& what) {
  std::vector<torch::Tensor> inputs = {shard};
  std::vector<std::vector<torch::Tensor>> outputs;
  if (rank_ == 0) {
    outputs.resize(1);
    for (int r = 0; r < world_size_; ++r) {
      outputs[0].push_back(flat.narrow(0, r * shard.numel(), shard.numel()));
    }
  }
  c10d::GatherOptions options;
  options.rootRank = 0;
  try {
    const core::CollectiveWait waiting(what);
    payload_bytes_ += static_cast<int64_t>(shard.nbytes());
    group_->collectives->gather(outputs, inputs, options)->wait();
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
    payload_bytes_ += static_cast<int64_t>(flat.nbytes());
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

}  // namespace dptrain::distributed
