// The pieces that let a rank of a job across machines find its own address and name a lost peer:
// the local end of a route (distributed/route.h), the records ranks leave in the store and their
// heartbeats (distributed/peers.h, distributed/heartbeat.h), and the endpoint a rank chooses
// (distributed/endpoint.h).
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "distributed/endpoint.h"
#include "distributed/heartbeat.h"
#include "distributed/peers.h"
#include "distributed/route.h"
#include "launch/environment.h"
#include "support/catch.h"

using namespace dptrain::distributed;
using namespace dptrain::launch;

namespace {

EnvLookup environment(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto found = values.find(name);
    if (found == values.end()) return std::nullopt;
    return found->second;
  };
}

RankInfo across_two_machines(int node, const std::string& master) {
  RankInfo info;
  info.rank = node;
  info.world_size = 2;
  info.node_rank = node;
  info.master_addr = master;
  info.master_port = 29500;
  return info;
}

}  // namespace

TEST_CASE("loopback addresses are told by the address, 127.0.1.1 included", "[dist][route]") {
  for (const char* address : {"127.0.0.1", "127.0.1.1", "127.255.0.9", "::1", "::ffff:127.0.1.1"}) {
    INFO(address);
    CHECK(is_loopback_address(address));
  }
  for (const char* address :
       {"10.78.0.1", "192.168.1.2", "fd00::2", "::ffff:10.0.0.1", "host0", ""}) {
    INFO(address);
    CHECK_FALSE(is_loopback_address(address));
  }
}

TEST_CASE("the route to the loopback starts on the loopback, and a bad name is an error naming it",
          "[dist][route]") {
  const LocalRoute route = route_to("127.0.0.1", "rank 0");
  CHECK(route.address == "127.0.0.1");
  CHECK(route.loopback);
  CHECK(route.interface == "lo");
  try {
    route_to("no-such-host.invalid", "rank 3 (node 1)");
    FAIL("an unresolvable master address must be an error");
  } catch (const dptrain::core::Error& e) {
    CHECK(e.code() == dptrain::core::ErrorCode::kDistributed);
    CHECK_THAT(e.what(), ContainsSubstring("rank 3 (node 1): the master address "
                                           "\"no-such-host.invalid\" does not resolve here"));
  }
}

TEST_CASE("a peer record goes through the store and back, and names its rank", "[dist][peers]") {
  const PeerRecord record{1, "10.78.0.2", "eth0", "host1"};
  const auto back = decode_peer(encode(record));
  REQUIRE(back);
  CHECK(back->node == 1);
  CHECK(back->address == "10.78.0.2");
  CHECK(back->interface == "eth0");
  CHECK(back->host == "host1");
  CHECK(describe_peer(3, 1, record) == "rank 3 (node 1, 10.78.0.2 on eth0, host host1)");
  CHECK(describe_peer(3, 1, std::nullopt) == "rank 3 (node 1)");
  const auto no_interface = decode_peer(encode({0, "10.78.0.1", "", ""}));
  REQUIRE(no_interface);
  CHECK(no_interface->interface.empty());
  for (const char* bad : {"", "1\t2", "x\ta\tb\tc", "-1\ta\tb\tc", "1\ta\tb\tc\td"}) {
    INFO(bad);
    CHECK_FALSE(decode_peer(bad));
  }
}

TEST_CASE("the book keeps records, failures and beats under the job's prefix", "[dist][peers]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PeerBook book(store, "dptrain/job/open/0/", 3);
  CHECK_FALSE(book.record(1));
  book.publish(1, {1, "10.78.0.2", "veth1", "host1"});
  REQUIRE(book.record(1));
  CHECK(book.record(1)->address == "10.78.0.2");
  CHECK(store->check({"dptrain/job/open/0/peer/1"}));
  CHECK_FALSE(book.first_failure());
  book.post_failure(2, "rank 2: no route");
  REQUIRE(book.first_failure());
  CHECK(book.first_failure()->first == 2);
  CHECK(book.first_failure()->second == "rank 2: no route");
  CHECK(book.beats() == std::vector<int64_t>{-1, -1, -1});
  book.set_beat(0, "7");
  CHECK(book.beats() == std::vector<int64_t>{7, -1, -1});
  store->set(arrival_key("dptrain/job/open/0/", 0), std::vector<uint8_t>{1});
  CHECK(book.never_arrived() == std::vector<int>{1, 2});
}

TEST_CASE("a heartbeat moves while its store answers", "[dist][peers]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PeerBook reader(store, "p/", 2);
  {
    const Heartbeat beating(PeerBook(store, "p/", 2), 1, std::chrono::milliseconds(200));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    // Silence starts two periods after the last answer; a loaded machine may be late by one.
    CHECK(beating.store_silence().count() == 0);
  }
  const int64_t stopped = reader.beats()[1];
  CHECK(stopped >= 2);
  CHECK(reader.beats()[0] == -1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(reader.beats()[1] == stopped);  // stopped with its heartbeat
}

TEST_CASE("the endpoint: the interface variable wins, one machine keeps to the loopback",
          "[dist][peers]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PeerBook book(store, "p/", 2);
  const auto soon = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  const Endpoint named = choose_endpoint(across_two_machines(1, "10.0.0.1"),
                                         environment({{"GLOO_SOCKET_IFNAME", "eth7"}}), book, soon);
  CHECK(named.address.empty());
  CHECK(named.interface == "eth7");
  CHECK(describe(named) == "the interface eth7 (GLOO_SOCKET_IFNAME)");
  RankInfo alone = across_two_machines(0, "127.0.0.1");
  alone.local_world_size = 2;
  const Endpoint local = choose_endpoint(alone, environment({}), book, soon);
  CHECK(local.address == "127.0.0.1");
  CHECK(describe(local) == "127.0.0.1 on lo (every rank is on this machine)");
}

TEST_CASE("a loopback master is refused at once off node 0, and posted for node 0 to read",
          "[dist][peers]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PeerBook book(store, "p/", 2);
  const auto soon = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  CHECK_THROWS_WITH(refuse_loopback_master(across_two_machines(1, "localhost")),
                    ContainsSubstring("rank 1 (node 1): the master address \"localhost\" is "
                                      "127.0.0.1 here, a loopback address, but the job spans 2 "
                                      "machines"));
  CHECK_NOTHROW(refuse_loopback_master(across_two_machines(0, "localhost")));
  CHECK_THROWS_WITH(
      choose_endpoint(across_two_machines(1, "127.0.0.1"), environment({}), book, soon),
      ContainsSubstring("a loopback address"));
  REQUIRE(book.first_failure());
  CHECK(book.first_failure()->first == 1);
  // Node 0 on its loopback waits for another node's record, and ends with the posted failure.
  CHECK_THROWS_WITH(
      choose_endpoint(across_two_machines(0, "127.0.0.1"), environment({}), book, soon),
      ContainsSubstring("rank 0 (node 0): rank 1 gave up before the group formed"));
}

TEST_CASE("node 0 on its loopback takes the route to another node's published address",
          "[dist][peers]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PeerBook book(store, "p/", 2);
  book.publish(1, {1, "127.0.0.1", "lo", "host1"});  // the only address every machine has here
  const Endpoint chosen =
      choose_endpoint(across_two_machines(0, "localhost"), environment({}), book,
                      std::chrono::steady_clock::now() + std::chrono::seconds(1));
  CHECK(chosen.address == "127.0.0.1");
  CHECK_THAT(chosen.chosen_by, ContainsSubstring("the route to rank 1 at 127.0.0.1"));
  PeerBook empty(c10::make_intrusive<c10d::HashStore>(), "q/", 2);
  CHECK_THROWS_WITH(
      choose_endpoint(across_two_machines(0, "localhost"), environment({}), empty,
                      std::chrono::steady_clock::now() + std::chrono::milliseconds(300)),
      ContainsSubstring("rank 0 (node 0): ranks 0 and 1 never arrived within the "
                        "timeout"));
}
