// Where a rank's Gloo endpoint listens, and which interface NCCL's sockets use, decided before the
// group forms (distributed/route.h says why the route to the master decides it):
//
// - GLOO_SOCKET_IFNAME, when given, wins (as in PyTorch);
// - every rank on one machine: the loopback;
// - else the local end of the route to MASTER_ADDR. A rank that is not on node 0 and finds the
//   master address on its own loopback is told at once that the job cannot form (the other nodes
//   would wait for it until the timeout). Node 0 may find it there legitimately (stock Debian maps
//   the machine's own name to 127.0.1.1): it takes the route to a rank of another node instead,
//   from the address that rank publishes.
#pragma once

#include <chrono>
#include <string>

#include "distributed/peers.h"
#include "launch/environment.h"

namespace dptrain::distributed {

struct Endpoint {
  std::string address;    // what Gloo binds ("" with GLOO_SOCKET_IFNAME: Gloo picks on it)
  std::string interface;  // "" when no interface lists the address
  std::string chosen_by;  // "the route to the master 10.78.0.1", for the start line
};

// Before a rank that is not on node 0 looks for the store: a distributed error, at once, when the
// master address is a loopback address here (it would wait out the timeout for a store that is
// on another machine).
void refuse_loopback_master(const launch::RankInfo& info);

// A distributed error naming the rank, the address and its hint when no endpoint can be chosen;
// posts that error in `book` first, so that node 0, waiting for this rank's address, ends too.
Endpoint choose_endpoint(const launch::RankInfo& info, const launch::EnvLookup& env, PeerBook& book,
                         std::chrono::steady_clock::time_point deadline);

// The start line's words: "10.78.0.2 on eth0 (the route to the master 10.78.0.1)".
std::string describe(const Endpoint& endpoint);

}  // namespace dptrain::distributed
