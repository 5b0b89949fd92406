#include "distributed/endpoint.h"

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "core/interrupt.h"
#include "distributed/route.h"

namespace dptrain::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using core::Error;
using core::ErrorCode;

std::string rank_name(const launch::RankInfo& info) {
  return "rank " + std::to_string(info.rank) + " (node " + std::to_string(info.node_rank) + ")";
}

std::string loopback_master_message(const launch::RankInfo& info, const std::string& address) {
  return rank_name(info) + ": the master address \"" + info.master_addr + "\" is " + address +
         " here, a loopback address, but the job spans " +
         std::to_string(info.world_size / std::max(info.local_world_size, 1)) +
         " machines: this machine cannot reach node 0 through it, nor node 0 this one";
}

[[noreturn]] void fail(PeerBook& book, const launch::RankInfo& info, const std::string& message,
                       const std::string& hint) {
  book.post_failure(info.rank, message);
  throw Error(ErrorCode::kDistributed, message, hint);
}

const char* const kLoopbackHint =
    "give every node the address or name by which the other machines reach node 0 "
    "(--master-addr, MASTER_ADDR); under torchrun, give each machine a name of its own that "
    "resolves to its network address (/etc/hosts), since torchrun hands out node 0's name";

// Node 0 with the master on its loopback: the route to the first rank of another node that says
// where it is.
Endpoint route_to_another_node(const launch::RankInfo& info, PeerBook& book,
                               Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    if (core::interrupt_requested()) {
      throw Error(ErrorCode::kInterrupted, rank_name(info) + ": stopped by Ctrl-C");
    }
    if (const auto failure = book.first_failure()) {
      fail(book, info,
           rank_name(info) + ": rank " + std::to_string(failure->first) +
               " gave up before the group formed: " + failure->second,
           "see that rank's error");
    }
    for (int r = 0; r < info.world_size; ++r) {
      const auto peer = book.record(r);
      if (!peer || peer->node == info.node_rank || peer->address.empty()) continue;
      const LocalRoute route = route_to(peer->address, rank_name(info));
      return {route.address, route.interface,
              "the route to rank " + std::to_string(r) + " at " + peer->address +
                  ", since the master address resolves to this machine's loopback"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::vector<int> missing = book.never_arrived();
  fail(book, info,
       rank_name(info) + ": " +
           (missing.empty() ? "no rank of another node said where it is"
                            : rank_list(missing) + " never arrived") +
           " within the timeout; this machine cannot tell its own network address from the "
           "master address \"" +
           info.master_addr + "\" (a loopback address here)",
       "start every node; " + std::string(kLoopbackHint));
}

}  // namespace

void refuse_loopback_master(const launch::RankInfo& info) {
  if (info.one_machine() || info.node_rank == 0 || info.master_addr.empty()) return;
  const std::string address = resolve_host(info.master_addr, rank_name(info));
  if (is_loopback_address(address)) {
    throw Error(ErrorCode::kDistributed, loopback_master_message(info, address), kLoopbackHint);
  }
}

Endpoint choose_endpoint(const launch::RankInfo& info, const launch::EnvLookup& env, PeerBook& book,
                         Clock::time_point deadline) {
  if (const auto interface = env("GLOO_SOCKET_IFNAME")) {
    return {"", *interface, "GLOO_SOCKET_IFNAME"};
  }
  if (info.one_machine()) return {"127.0.0.1", "lo", "every rank is on this machine"};
  LocalRoute route;
  try {
    route = route_to(info.master_addr, rank_name(info));
  } catch (const Error& e) {
    fail(book, info, e.what(), e.hint());
  }
  if (!route.loopback) {
    return {route.address, route.interface, "the route to the master " + info.master_addr};
  }
  if (info.node_rank != 0)
    fail(book, info, loopback_master_message(info, route.address), kLoopbackHint);
  return route_to_another_node(info, book, deadline);
}

std::string describe(const Endpoint& endpoint) {
  std::string where = endpoint.address.empty() ? "the interface" : endpoint.address;
  if (!endpoint.interface.empty()) {
    where += endpoint.address.empty() ? " " + endpoint.interface : " on " + endpoint.interface;
  }
  return where + " (" + endpoint.chosen_by + ")";
}

}  // namespace dptrain::distributed
